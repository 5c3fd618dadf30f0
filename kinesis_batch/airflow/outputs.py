"""The DAGs' own settings from Airflow's configuration (``[kinesis_batch]``, or
``AIRFLOW__KINESIS_BATCH__...``): the main output, and the stream of the single-stream
``kinesis_catchup`` DAG. Read when a DAG file is parsed: an Asset's URI is fixed at parse time,
so it cannot follow a run's params.

Asset URIs (Airflow 3.3 sanitizes them: a scheme it has no handler for is kept as written;
``s3://`` needs a bucket; ``airflow://`` is reserved):

- parquet: ``file:///absolute/root``
- delta: ``s3://bucket/prefix`` or ``file:///absolute/path``
- iceberg: ``iceberg://CATALOG/NAMESPACE.TABLE`` (CATALOG ``default`` when none is named), the
  same URI the Iceberg sink reports.
"""

from __future__ import annotations

from kinesis_batch import defaults
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output import Output
from kinesis_batch.parsers import validate_stream_name

SECTION = "kinesis_batch"


def _setting(key: str) -> str:
    from airflow.sdk import conf

    return (conf.get(SECTION, key, fallback="") or "").strip()


def configured_output() -> Output:
    """The main output as ``[kinesis_batch] output/format/catalog`` name it (parquet in
    /tmp/kinesis-batch/output when unset). A bad combination raises IllegalArgumentError, which
    a DAG file shows as its import error."""
    try:
        return Output(
            format=_setting("format") or defaults.FORMAT,
            output=_setting("output") or defaults.OUTPUT,
            catalog=_setting("catalog") or None,
        )
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(f"[{SECTION}] in Airflow's configuration: {exc}") from exc


def configured_stream() -> str:
    """``[kinesis_batch] stream``: the stream ``kinesis_catchup`` runs on a schedule; "" when
    none is configured (it then runs only when triggered with a stream)."""
    stream = _setting("stream")
    if stream:
        try:
            validate_stream_name(stream)
        except IllegalArgumentError as exc:
            raise IllegalArgumentError(f"[{SECTION}] stream in Airflow's configuration: {exc}") from exc
    return stream


__all__ = ["configured_output", "configured_stream"]
