"""The streams file: a ``kinesis_catchup__<stream>`` and a ``kinesis_maintain__<stream>`` DAG per
entry (dags/kinesis_streams.py).

A TOML file with one ``[[streams]]`` table per stream; only ``stream`` and ``output`` are
required. An entry holds the stream's settings (kinesis_batch.settings: the same as the command
line's flags, by field name) and the DAGs' own (:data:`OWN`); docs/airflow.md lists them all::

    [[streams]]
    stream = "clicks"
    output = "s3://lake/tables/clicks"   # parquet: a folder; delta: a path or URI; iceberg: NS.TABLE
    format = "delta"
    schedule = "@hourly"                 # the DAGs' own: schedule, spark_conn_id, aws_conn_id,
    maintain_schedule = "30 3 * * *"     #   maintain_schedule, retain_hours, small_file_mb

Where: ``[kinesis_batch] streams_file`` in Airflow's configuration
(``AIRFLOW__KINESIS_BATCH__STREAMS_FILE``), default ``$AIRFLOW_HOME/kinesis-batch-streams.toml``.
No file, no per-stream DAGs. Each entry is checked on its own: a broken one is reported with its
number, its stream and the field, and the others still make their DAGs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kinesis_batch import defaults
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.maintenance.settings import MAINTAIN_OPTIONS, MaintainSettings
from kinesis_batch.parsers import validate_small_file_mb
from kinesis_batch.settings import AIRFLOW, StreamSettings, as_field_message, offered
from kinesis_batch.streams_file import BrokenEntry, StreamGroup, StreamsFile

SECTION = "kinesis_batch"
FILE_NAME = "kinesis-batch-streams.toml"


@dataclass(frozen=True)
class StreamEntry:
    """One stream's consumer DAGs: the stream's settings (kinesis_batch.settings) and the DAGs'
    own (:data:`OWN`). Checked when built: a bad value raises IllegalArgumentError that starts
    with the field's name."""

    settings: StreamSettings
    schedule: str = defaults.SCHEDULE
    spark_conn_id: str = ""
    aws_conn_id: str = defaults.AWS_CONN_ID
    maintain_schedule: str = defaults.MAINTAIN_SCHEDULE
    retain_hours: int = defaults.RETAIN_HOURS
    small_file_mb: float = defaults.SMALL_FILE_MB

    @classmethod
    def from_mapping(cls, **values: Any) -> StreamEntry:
        """From a ``[[streams]]`` table: its settings and the DAGs' own fields by name."""
        own = {name: values.pop(name) for name in OWN if name in values}
        try:
            settings = StreamSettings.from_mapping(values)
        except IllegalArgumentError as exc:
            raise IllegalArgumentError(as_field_message(str(exc))) from exc
        return cls(settings, **own)

    def __post_init__(self) -> None:
        for name, wanted in (("retain_hours", int), ("small_file_mb", float)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (wanted, int)):
                raise IllegalArgumentError(
                    f"{name}: {value!r} is not a {'whole number' if wanted is int else 'number'}"
                )
        for name in ("schedule", "spark_conn_id", "aws_conn_id", "maintain_schedule"):
            if not isinstance(getattr(self, name), str):
                raise IllegalArgumentError(f"{name}: {getattr(self, name)!r} is not a string")
        if not self.schedule.strip():
            raise IllegalArgumentError("schedule: empty (a cron expression or a preset such as @hourly)")
        if not self.maintain_schedule.strip():
            raise IllegalArgumentError("maintain_schedule: empty (a cron expression or a preset such as @daily)")
        try:
            self.maintain_settings()
        except IllegalArgumentError as exc:
            raise IllegalArgumentError(as_field_message(str(exc), MAINTAIN_OPTIONS)) from exc
        validate_small_file_mb(self.small_file_mb, setting="small_file_mb")

    @property
    def stream(self) -> str:
        return self.settings.stream

    def maintain_settings(self) -> MaintainSettings:
        return MaintainSettings(self.settings.target_file_mb, self.retain_hours, self.settings.tombstone_hours)

    @property
    def dag_id(self) -> str:
        return "kinesis_catchup__" + re.sub(r"[^A-Za-z0-9_.-]", "_", self.stream)

    @property
    def maintain_dag_id(self) -> str:
        return "kinesis_maintain__" + re.sub(r"[^A-Za-z0-9_.-]", "_", self.stream)


#: The DAGs' own fields of an entry, beside the stream's settings.
OWN = tuple(field.name for field in fields(StreamEntry) if field.name != "settings")
#: What an entry may set.
ENTRY_FIELDS = (*(option.name for option in offered(AIRFLOW)), *OWN)


def broken_dag_id(broken: BrokenEntry) -> str:
    """The DAG a broken entry would have made (by its number when its stream is unusable)."""
    if broken.stream and re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", broken.stream):
        return "kinesis_catchup__" + broken.stream
    return f"kinesis_catchup__entry_{broken.number}"


def streams_file() -> Path:
    """Where the streams file is: ``[kinesis_batch] streams_file``, else in AIRFLOW_HOME."""
    from airflow.sdk import conf

    configured = (conf.get(SECTION, "streams_file", fallback="") or "").strip()
    home = os.environ.get("AIRFLOW_HOME") or str(Path.home() / "airflow")
    return Path(configured) if configured else Path(home) / FILE_NAME


def read_streams(path: Path) -> tuple[list[StreamEntry], list[BrokenEntry]]:
    """The file's entries, each checked on its own; a missing file has none. A file that is not
    TOML, or has no ``[[streams]]``, raises IllegalArgumentError (no DAG can be made from it)."""
    if not path.exists():
        return [], []
    return StreamsFile.read(path).entries(StreamEntry.from_mapping, ENTRY_FIELDS, key=_dag_id)


def read_groups(path: Path) -> tuple[list[StreamGroup], dict[str, str]]:
    """The file's groups, each checked on its own (kinesis_batch.streams_file.StreamsFile.group),
    and the broken ones: group name -> its line. A missing file has none."""
    if not path.exists():
        return [], {}
    streams = StreamsFile.read(path)
    groups: list[StreamGroup] = []
    broken: dict[str, str] = {}
    for table in streams.group_tables:
        name = str(table.get("name") or "")
        try:
            groups.append(streams.group(name))
        except IllegalArgumentError as exc:
            broken[name] = str(exc)
    return groups, broken


def _dag_id(entry: StreamEntry) -> str:
    return entry.dag_id


__all__ = ["BrokenEntry", "StreamEntry", "broken_dag_id", "read_groups", "read_streams", "streams_file"]
