"""Two DAGs per stream of the streams file (see kinesis_batch.airflow.streams for its format and
where it is: ``[kinesis_batch] streams_file``, default ``$AIRFLOW_HOME/kinesis-batch-streams.toml``):

- ``kinesis_catchup__<stream>``: the catch-up DAG (kinesis_catchup's tasks) with the entry's
  settings as its params' defaults, its schedule, tags ``stream:<stream>`` and
  ``format:<format>``, and its own Asset: the entry's output, so a downstream DAG can be
  scheduled on one stream's data;
- ``kinesis_maintain__<stream>``: the daily maintenance of that output (and of its dead-letter
  output when the stream decodes), on ``maintain_schedule``;
- ``kinesis_group__<group>``: one per ``[[groups]]`` table, every stream of the group in one run
  on the group's schedule, a task per stream for its outcome (kinesis_batch.airflow.group); a
  stream in a group keeps its own catch-up DAG, run by hand only.

A broken entry fails only its own DAG: it shows as this file's import error, one line naming
the entry and the field, and the other streams' DAGs load.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, Asset

from kinesis_batch.airflow.dags import catch_up_dag, catch_up_params
from kinesis_batch.airflow.group import group_dag, group_dag_id
from kinesis_batch.airflow.maintain import maintain_dag, maintain_params
from kinesis_batch.airflow.streams import StreamEntry, broken_dag_id, read_groups, read_streams, streams_file
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.streams_file import stream_name

PATH = streams_file()
STREAMS, BROKEN = read_streams(PATH)
GROUPS, BROKEN_GROUPS = read_groups(PATH)
#: stream -> its group: the group's DAG reads it on its schedule, its own DAG runs by hand only.
GROUPED = {stream: group.name for group in GROUPS for stream in group.streams}


class BrokenStreamDag(DAG):
    """Stands for a broken entry: the DAG processor validates every DAG of a file before taking
    it, records the one that fails as the file's import error, and still takes the others.
    Airflow keeps one import error per file, so each names every broken entry."""

    def validate(self) -> None:
        raise IllegalArgumentError("; ".join(broken.describe(PATH) for broken in BROKEN))


class BrokenGroupDag(DAG):
    """Stands for a broken [[groups]] table, as BrokenStreamDag for an entry."""

    def __init__(self, *, line: str, **kwargs: Any) -> None:
        super().__init__(schedule=None, **kwargs)
        self.line = line

    def validate(self) -> None:
        raise IllegalArgumentError(self.line)


def doc(entry: StreamEntry) -> str:
    settings = entry.settings
    output = settings.destination
    grouped = (
        f" Read on the schedule of group `{GROUPED[entry.stream]}`; this DAG runs by hand."
        if entry.stream in GROUPED
        else ""
    )
    spark = f"spark-submit to `{entry.spark_conn_id}`" if entry.spark_conn_id else f"`{entry.settings.spark_master}`"
    return (
        f"Catches **{entry.stream}** up into `{output.asset_uri}` ({settings.format}), {entry.schedule}.{grouped}\n\n"
        f"| setting | value |\n|---|---|\n"
        f"| lease table | `{settings.lease_table}` |\n"
        f"| Spark | {spark} |\n| AWS connection | `{entry.aws_conn_id}` |\n"
        f"| lag threshold | {settings.lag_threshold_seconds:g} s |\n| lease | {settings.lease_seconds:g} s |\n"
        f"| read limits | `{settings.read_limits}` |\n| decode | `{settings.decode}` |\n\n"
        f"From `{PATH}`. `check_lag` fails the run past the lag threshold or at retention risk."
    )


def maintain_doc(entry: StreamEntry) -> str:
    dead_letters = entry.settings.dead_letters_at()
    dead = f" and its dead letters `{dead_letters}`" if dead_letters else ""
    return (
        f"Maintains **{entry.stream}**'s output `{entry.settings.destination.asset_uri}`{dead}, "
        f"{entry.maintain_schedule}: compacts small files into files of {entry.settings.target_file_mb} MiB, "
        f"expires versions older than {entry.retain_hours} h, removes orphan files. `check_files` warns below "
        f"{entry.small_file_mb:g} MiB a file.\n\nFrom `{PATH}`."
    )


for entry in STREAMS:
    output = entry.settings.destination
    tags = [f"stream:{entry.stream}", f"format:{output.format}"]
    globals()[entry.dag_id] = catch_up_dag(
        entry.dag_id,
        catch_up_params(entry.settings.to_json(), spark_conn_id=entry.spark_conn_id, aws_conn_id=entry.aws_conn_id),
        outlets=[Asset(output.asset_uri, uri=output.asset_uri)],
        schedule=None if entry.stream in GROUPED else entry.schedule,
        tags=tags + ([f"group:{GROUPED[entry.stream]}"] if entry.stream in GROUPED else []),
        doc_md=doc(entry),
    )
    globals()[entry.maintain_dag_id] = maintain_dag(
        entry.maintain_dag_id,
        maintain_params(
            output=output,
            aws_conn_id=entry.aws_conn_id,
            target_file_mb=entry.settings.target_file_mb,
            retain_hours=entry.retain_hours,
            tombstone_hours=entry.settings.tombstone_hours,
            small_file_mb=entry.small_file_mb,
            dead_letter_output=entry.settings.dead_letters_at(),
        ),
        schedule=entry.maintain_schedule,
        tags=tags,
        doc_md=maintain_doc(entry),
    )

by_stream = {entry.stream: entry for entry in STREAMS}
unread = {stream_name(broken.stream): broken.describe(PATH) for broken in BROKEN}
for group in GROUPS:
    globals()[group_dag_id(group.name)] = group_dag(group, by_stream, unread)
for name, line in BROKEN_GROUPS.items():  # a broken group fails only its own DAG, as a broken entry does
    globals()[group_dag_id(name or "unnamed")] = BrokenGroupDag(dag_id=group_dag_id(name or "unnamed"), line=line)

made = {entry.dag_id for entry in STREAMS}
for broken in BROKEN:  # a stream listed twice keeps its first DAG; the second is named by number
    dag_id = broken_dag_id(broken)
    dag_id = dag_id if dag_id not in made else f"kinesis_catchup__entry_{broken.number}"
    globals()[dag_id] = BrokenStreamDag(dag_id=dag_id, schedule=None)
