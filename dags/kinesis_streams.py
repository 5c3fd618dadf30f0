"""Two DAGs per stream of the streams file (see kinesis_batch.airflow.streams for its format and
where it is: ``[kinesis_batch] streams_file``, default ``$AIRFLOW_HOME/kinesis-batch-streams.toml``):

- ``kinesis_catchup__<stream>``: the catch-up DAG (kinesis_catchup's tasks) with the entry's
  settings as its params' defaults, its schedule, tags ``stream:<stream>`` and
  ``format:<format>``, and its own Asset: the entry's output, so a downstream DAG can be
  scheduled on one stream's data;
- ``kinesis_maintain__<stream>``: the daily maintenance of that output (and of its dead-letter
  output when the stream decodes), on ``maintain_schedule``.

A broken entry fails only its own DAG: it shows as this file's import error, one line naming
the entry and the field, and the other streams' DAGs load.
"""

from __future__ import annotations

from airflow.sdk import DAG, Asset

from kinesis_batch.airflow.dags import catch_up_dag, catch_up_params
from kinesis_batch.airflow.maintain import maintain_dag, maintain_params
from kinesis_batch.airflow.streams import StreamEntry, broken_dag_id, read_streams, streams_file
from kinesis_batch.errors import IllegalArgumentError

PATH = streams_file()
STREAMS, BROKEN = read_streams(PATH)


class BrokenStreamDag(DAG):
    """Stands for a broken entry: the DAG processor validates every DAG of a file before taking
    it, records the one that fails as the file's import error, and still takes the others.
    Airflow keeps one import error per file, so each names every broken entry."""

    def validate(self) -> None:
        raise IllegalArgumentError("; ".join(broken.describe(PATH) for broken in BROKEN))


def doc(entry: StreamEntry) -> str:
    output = entry.as_output()
    spark = f"spark-submit to `{entry.spark_conn_id}`" if entry.spark_conn_id else f"`{entry.spark_master}`"
    return (
        f"Catches **{entry.stream}** up into `{output.asset_uri}` ({entry.format}), {entry.schedule}.\n\n"
        f"| setting | value |\n|---|---|\n"
        f"| lease table | `{entry.table or 'kinesis-batch-' + entry.stream}` |\n"
        f"| Spark | {spark} |\n| AWS connection | `{entry.aws_conn_id}` |\n"
        f"| lag threshold | {entry.lag_threshold_seconds:g} s |\n| lease | {entry.lease_seconds:g} s |\n"
        f"| read limits | `{entry.read_limits}` |\n| decode | `{entry.decode}` |\n\n"
        f"From `{PATH}`. `check_lag` fails the run past the lag threshold or at retention risk."
    )


def maintain_doc(entry: StreamEntry) -> str:
    dead = f" and its dead letters `{entry.dead_letters_at()}`" if entry.dead_letters_at() else ""
    return (
        f"Maintains **{entry.stream}**'s output `{entry.as_output().asset_uri}`{dead}, {entry.maintain_schedule}: "
        f"compacts small files into files of {entry.target_file_mb} MiB, expires versions older than "
        f"{entry.retain_hours} h, removes orphan files. `check_files` warns below {entry.small_file_mb:g} MiB "
        f"a file.\n\nFrom `{PATH}`."
    )


for entry in STREAMS:
    output = entry.as_output()
    globals()[entry.dag_id] = catch_up_dag(
        entry.dag_id,
        catch_up_params(
            stream=entry.stream,
            output=output,
            table=entry.table,
            spark_master=entry.spark_master,
            spark_conn_id=entry.spark_conn_id,
            aws_conn_id=entry.aws_conn_id,
            lease_seconds=entry.lease_seconds,
            read_limits=entry.read_limits,
            lag_threshold_seconds=entry.lag_threshold_seconds,
            decoding=entry.as_decoding(),
            dead_letter_threshold=entry.dead_letter_threshold,
            partition_by=entry.partition_by,
            target_file_mb=entry.target_file_mb,
        ),
        outlets=[Asset(output.asset_uri, uri=output.asset_uri)],
        schedule=entry.schedule,
        tags=[f"stream:{entry.stream}", f"format:{entry.format}"],
        doc_md=doc(entry),
    )
    globals()[entry.maintain_dag_id] = maintain_dag(
        entry.maintain_dag_id,
        maintain_params(
            output=output,
            aws_conn_id=entry.aws_conn_id,
            target_file_mb=entry.target_file_mb,
            retain_hours=entry.retain_hours,
            small_file_mb=entry.small_file_mb,
            dead_letter_output=entry.dead_letters_at(),
        ),
        schedule=entry.maintain_schedule,
        tags=[f"stream:{entry.stream}", f"format:{entry.format}"],
        doc_md=maintain_doc(entry),
    )

made = {entry.dag_id for entry in STREAMS}
for broken in BROKEN:  # a stream listed twice keeps its first DAG; the second is named by number
    dag_id = broken_dag_id(broken)
    dag_id = dag_id if dag_id not in made else f"kinesis_catchup__entry_{broken.number}"
    globals()[dag_id] = BrokenStreamDag(dag_id=dag_id, schedule=None)
