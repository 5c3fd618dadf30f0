"""Output: the sinks a batch is published to, one module per format, behind one interface
(:class:`~kinesis_batch.output.sink.Sink`). ``run.py``, recovery and the status views use that
interface only; :func:`open_sink` is where a format's name becomes its sink."""

from __future__ import annotations

from kinesis_batch.aws import S3Settings
from kinesis_batch.config import validate_output
from kinesis_batch.output.records import CommitRecord, ShardCommit
from kinesis_batch.output.sink import Sink

FORMATS = ("parquet", "delta", "iceberg")


def open_sink(
    format: str, output: str, *, app: str, stream: str, catalog: str | None = None, s3: S3Settings | None = None
) -> Sink:
    """The sink for ``--format``/``--output``/``--catalog``. ``app`` names the consumer (its lease
    table) in the table markers, so two consumers of one stream can share a table."""
    validate_output(format, output, catalog)
    s3 = s3 or S3Settings()
    if format == "delta":
        from kinesis_batch.output.delta import DeltaSink

        return DeltaSink(output, app=app, stream=stream, s3=s3)
    if format == "iceberg":
        from kinesis_batch.output.catalogs import load_catalog
        from kinesis_batch.output.iceberg import IcebergSink

        return IcebergSink(output, load_catalog(catalog, s3), app=app, stream=stream, s3=s3)
    from kinesis_batch.output.parquet import ParquetSink

    return ParquetSink(output)


__all__ = ["FORMATS", "CommitRecord", "ShardCommit", "Sink", "open_sink"]
