"""Decoding: a page of Kinesis records into typed rows and dead letters, in the Spark tasks.

One pipeline per shard range (:mod:`~kinesis_batch.decoding.pipeline`), in stages that each
return the records they reject as values: decompress, decode (:mod:`.formats`), transform,
conform to the table's schema. Every record ends as rows of the table or as one dead-letter row,
never both and never neither (a transform may deliberately filter a record out: it is counted).
"""
