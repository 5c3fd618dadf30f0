"""Backfill by hand: read a stream again from an older position into a separate output.

The form (Params with JSON schema) takes the stream, the shards (default all), the start (trim
horizon, a timestamp, the checkpoint before a run of the history, or a sequence number), the end
(a timestamp, or the tip), the output, and whether to move the main checkpoints (default
no: the backfill then has a lease table of its own and never conflicts with the hourly run).
It offers every stream setting of a catch-up run too (decoding, changes, routing, ...), each
empty by default: the stream's own, from its streams-file entry
(kinesis_batch.airflow.backfill).

The backfill writes to a table of its own unless ``output`` names one: left empty, it is derived
from the main output (``[kinesis_batch] output/format/catalog``, see kinesis_catchup) and the
backfill's id (the suffix of its lease table too): parquet ``ROOT-backfill-ID``, delta
``URI_backfill_ID``, iceberg ``NAMESPACE.TABLE_backfill_ID``. A backfill in another format than
the main output's must name its output.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import dag, get_current_context, task

from kinesis_batch.airflow.backfill import backfill_params
from kinesis_batch.airflow.outputs import configured_output, configured_stream
from kinesis_batch.airflow.steps import run_steps
from kinesis_batch.airflow.streams import read_streams, streams_file
from kinesis_batch.airflow.tasks import backfill_run, seed_backfill
from kinesis_batch.errors import IllegalArgumentError

MAIN = configured_output()
# The streams of the streams file are offered in the form (a broken file offers none: its
# import error shows on kinesis_streams.py, not here), then kinesis_catchup's stream.
try:
    CONFIGURED = [entry.stream for entry in read_streams(streams_file())[0]]
except IllegalArgumentError:
    CONFIGURED = []
CONFIGURED += [stream for stream in [configured_stream()] if stream and stream not in CONFIGURED]


def _ids() -> dict[str, Any]:
    context = get_current_context()
    dag_run = context["dag_run"]
    return {"params": dict(context["params"]), "dag_id": dag_run.dag_id, "run_id": dag_run.run_id, "main": MAIN}


def _run() -> Any:
    return backfill_run(**_ids())


@dag(
    dag_id="kinesis_backfill",
    schedule=None,
    catchup=False,
    params=backfill_params(CONFIGURED, MAIN),
    tags=["kinesis-batch"],
)
def kinesis_backfill() -> None:
    @task
    def check_and_seed() -> dict[str, str]:
        """Reject bad input with a clear message; seed the backfill's own checkpoints."""
        seeded: dict[str, str] = seed_backfill(**_ids())
        return seeded

    first, _ = run_steps(_run)
    check_and_seed() >> first


kinesis_backfill()
