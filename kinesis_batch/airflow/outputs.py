"""The DAGs' output: the main table named in Airflow's configuration, its Asset URI, and the
table a backfill writes to when it names none.

The main output is read from the ``[kinesis_batch]`` section (``output``, ``format``,
``catalog``; or ``AIRFLOW__KINESIS_BATCH__OUTPUT`` and so on) when a DAG file is parsed: an
Asset's URI is fixed at parse time, so it cannot follow a run's params.

Asset URIs (Airflow 3.3 sanitizes them: a scheme it has no handler for is kept as written;
``s3://`` needs a bucket; ``airflow://`` is reserved):

- parquet: ``file:///absolute/root``
- delta: ``s3://bucket/prefix`` or ``file:///absolute/path``
- iceberg: ``iceberg://CATALOG/NAMESPACE.TABLE`` (CATALOG ``default`` when none is named), the
  same URI the Iceberg sink reports.
"""

from __future__ import annotations

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.orchestration import DEFAULT_OUTPUT, Output, backfill_output
from kinesis_batch.output import FORMATS

SECTION = "kinesis_batch"


def configured_output() -> Output:
    """The main output as ``[kinesis_batch] output/format/catalog`` name it (parquet in
    /tmp/kinesis-batch/output when unset). A bad combination raises IllegalArgumentError, which
    a DAG file shows as its import error."""
    from airflow.sdk import conf

    def setting(key: str) -> str:
        return (conf.get(SECTION, key, fallback="") or "").strip()

    try:
        return Output(
            format=setting("format") or "parquet",
            output=setting("output") or DEFAULT_OUTPUT,
            catalog=setting("catalog") or None,
        )
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(f"[{SECTION}] in Airflow's configuration: {exc}") from exc


__all__ = ["DEFAULT_OUTPUT", "FORMATS", "Output", "backfill_output", "configured_output"]
