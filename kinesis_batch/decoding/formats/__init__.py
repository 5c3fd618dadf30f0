"""The decoders, one module per format, each behind :class:`~kinesis_batch.decoding.decoded.Decoder`."""
