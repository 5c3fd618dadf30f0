"""The output formats, and the --format/--output/--catalog combinations that cannot work."""

from __future__ import annotations

from kinesis_batch.errors import IllegalArgumentError

#: Hive folders of Parquet, a Delta table, an Iceberg table (one module each in this package).
FORMATS = ("parquet", "delta", "iceberg")


def drops_identity(format: str) -> bool:
    """Whether a format's files leave out an identity partition's column: Delta and parquet
    folders hold the value outside the file; pyiceberg reads a file's partition from its
    statistics, so Iceberg's files keep it."""
    return format != "iceberg"


def validate_output(format: str, output: str, catalog: str | None) -> None:
    """The --format/--output/--catalog combinations that cannot work, each said in one line."""
    if format not in FORMATS:
        raise IllegalArgumentError(f"--format: {format!r} is not one of {', '.join(FORMATS)}")
    if catalog and format != "iceberg":
        raise IllegalArgumentError("--catalog goes with --format iceberg")
    if format == "parquet" and output.startswith(("s3://", "s3a://")):
        raise IllegalArgumentError(
            f"--output {output}: the parquet format publishes by renaming a folder, and S3 has no atomic "
            "rename; write to S3 with --format delta or --format iceberg"
        )
    if format == "iceberg":
        namespace, _, table = output.rpartition(".")
        if not namespace or not table or "/" in output or any(not part for part in output.split(".")):
            raise IllegalArgumentError(
                f"--output {output!r}: an Iceberg table is named NAMESPACE.TABLE (for example analytics.clicks)"
            )
