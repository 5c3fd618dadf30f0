"""Backfill by hand: read a stream again from an older position into a separate output.

The form (Params with JSON schema) takes the stream, the shards (default all), the start (trim
horizon, a timestamp, the checkpoint before a run of the history, or a sequence number), the end
(a timestamp, or the tip), the output, and whether to move the main checkpoints (default
no: the backfill then has a lease table of its own and never conflicts with the hourly run).

The backfill writes to a table of its own unless ``output`` names one: left empty, it is derived
from the main output (``[kinesis_batch] output/format/catalog``, see kinesis_catchup) and the
backfill's id (the suffix of its lease table too): parquet ``ROOT-backfill-ID``, delta
``URI_backfill_ID``, iceberg ``NAMESPACE.TABLE_backfill_ID``. A backfill in another format than
the main output's must name its output.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Param, dag, get_current_context, task

from kinesis_batch import defaults
from kinesis_batch.airflow.dags import setting_param
from kinesis_batch.airflow.outputs import configured_output, configured_stream
from kinesis_batch.airflow.steps import run_steps
from kinesis_batch.airflow.streams import read_streams, streams_file
from kinesis_batch.airflow.tasks import backfill_run, seed_backfill
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output.formats import FORMATS
from kinesis_batch.settings import AIRFLOW, DECODING, offered

MAIN = configured_output()
# The streams of the streams file are offered in the form (a broken file offers none: its
# import error shows on kinesis_streams.py, not here), then kinesis_catchup's stream.
try:
    CONFIGURED = [entry.stream for entry in read_streams(streams_file())[0]]
except IllegalArgumentError:
    CONFIGURED = []
CONFIGURED += [stream for stream in [configured_stream()] if stream and stream not in CONFIGURED]
STREAM = {"default": CONFIGURED[0], "examples": CONFIGURED} if CONFIGURED else {}


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
    params={
        "stream": Param(
            type="string",
            minLength=1,
            maxLength=128,
            **STREAM,
            description="a stream of the streams file, or any other",
        ),
        "shards": Param([], type="array", items={"type": "string"}, description="shard ids; empty: all"),
        "start": Param(
            defaults.BACKFILL_START,
            type="string",
            pattern=r"^(trim_horizon|at_timestamp=.+|run=.+|after_sequence=[0-9]+)$",
            description="trim_horizon | at_timestamp=ISO8601 | run=RUN_ID (from the history) | after_sequence=N",
        ),
        "end": Param("", type="string", description="ISO 8601 arrival time to stop at; empty: the tip"),
        "format": Param(MAIN.format, type="string", enum=list(FORMATS)),
        "output": Param(
            "",
            type="string",
            description="empty: a table of the backfill's own next to the main output "
            f"({MAIN.format} {MAIN.output}); else a folder, table path or URI, or NAMESPACE.TABLE",
        ),
        "catalog": Param(
            MAIN.catalog or "", type="string", description="iceberg: a pyiceberg catalog name; empty: the default"
        ),
        "move_main_checkpoints": Param(False, type="boolean"),
        "table": Param("", type="string", description="main lease table (default kinesis-batch-STREAM)"),
        "spark_master": Param(defaults.SPARK_MASTER, type="string", description="Spark in the task's process"),
        "spark_conn_id": Param(
            "", type="string", description="a Spark connection: spark-submit the read step to that cluster instead"
        ),
        "aws_conn_id": Param(defaults.AWS_CONN_ID, type="string"),
        **{
            option.name: setting_param(option, option.default) for option in offered(AIRFLOW) if option.name in DECODING
        },
    },
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
