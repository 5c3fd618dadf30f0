"""A streams file: one ``[[streams]]`` table per stream's consumer, read the same way for every
orchestrator that makes a consumer per stream (Airflow's ``dags/kinesis_streams.py``, Dagster's
definitions). Each adapter says what an entry becomes and which settings it takes::

    [aws]                    # other top-level tables are the adapter's (Dagster: [aws], [spark])
    region_name = "eu-west-1"

    [[streams]]
    stream = "clicks"        # stream and output are required in every entry
    output = "s3://lake/tables/clicks"
    format = "delta"

    [[groups]]               # optional: streams read together in one run, each still its own
    name = "small"
    streams = ["clicks", "orders"]   # streams of the [[streams]] entries, each in one group at most
    schedule = "@hourly"             # the group's (default @hourly)

- A file that cannot be read, is not TOML, or has no ``[[streams]]`` tables raises
  IllegalArgumentError naming the file: no consumer can be made from it.
- Each entry is checked on its own: a missing or unknown setting, a value the adapter refuses,
  or a stream listed twice makes a :class:`BrokenEntry` (its number, its stream, what is wrong,
  starting with the field), and the other entries still load.
- A group is checked when it is asked for (:meth:`StreamsFile.group`): a group that is not
  there, one without streams, or a stream in two groups is one IllegalArgumentError naming the
  file and the group. A member without an entry is the run's line for that stream alone.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kinesis_batch import defaults
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.options import not_a_setting
from kinesis_batch.parsers import stream_of_arn
from kinesis_batch.settings import NAMES, StreamSettings, as_field_message

T = TypeVar("T")
REQUIRED = ("stream", "output")
GROUP_FIELDS = ("name", "streams", "schedule")
#: What the orchestrators add to an entry beside the stream's settings (Airflow's DAG fields:
#: kinesis_batch.airflow.streams.OWN; Dagster's definitions': kinesis_batch.dagster.defs.OWN),
#: so one file serves all of them: a command-line run of a group leaves them to their owners.
ORCHESTRATION = (
    "schedule",
    "spark_conn_id",
    "aws_conn_id",
    "maintain_schedule",
    "retain_hours",
    "small_file_mb",
    "cron_schedule",
    "checks_cron_schedule",
    "maintain_cron_schedule",
)


#: What an entry may hold for a command-line reader of the file (a group's run, the fleet's status).
ENTRY_FIELDS = (*NAMES, *ORCHESTRATION)


def entry_settings(**table: Any) -> StreamSettings:
    """An entry's stream settings, as a command-line reader of the file takes them: the
    orchestrators' own fields left to them, a bad value named as the file names it
    (``lease_seconds``, not ``--lease-seconds``)."""
    try:
        return StreamSettings.from_mapping({name: value for name, value in table.items() if name in NAMES})
    except IllegalArgumentError as exc:
        raise IllegalArgumentError(as_field_message(str(exc))) from exc


def stream_name(written: str) -> str:
    """A stream as an entry or a group may write it, by name or by ARN: its name (the stream's
    identity everywhere: its lease table, its outputs' paths, its metrics)."""
    try:
        return stream_of_arn(written) if written.startswith("arn:") else written
    except IllegalArgumentError:
        return written  # not an ARN: the entry's own check says so


@dataclass(frozen=True)
class StreamGroup:
    """Streams read together, in one run (``kinesis-batch run --streams-file F --group G``):
    each keeps its own entry's settings; the group has a name and a schedule."""

    name: str
    streams: tuple[str, ...]
    schedule: str = defaults.SCHEDULE


@dataclass(frozen=True)
class BrokenEntry:
    number: int  # 1-based, in file order
    stream: str  # "" when the entry names no stream
    message: str  # what is wrong, starting with the field

    def describe(self, path: Path) -> str:
        """One line: the file, the entry (by its stream too where it names one), what is wrong."""
        named = f" ({self.stream})" if self.stream else ""
        return f"{path}: stream {self.number}{named}: {self.message}"


@dataclass(frozen=True)
class StreamsFile:
    path: Path
    sections: dict[str, Any]  # the file's other top-level tables
    tables: list[dict[str, Any]]  # the [[streams]] tables, as written
    group_tables: list[dict[str, Any]] = field(default_factory=list)  # the [[groups]] tables, as written

    @classmethod
    def read(cls, path: Path) -> StreamsFile:
        try:
            body = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise IllegalArgumentError(f"{path}: {exc}") from exc
        tables = body.pop("streams", None)
        if not isinstance(tables, list) or not tables or not all(isinstance(table, dict) for table in tables):
            raise IllegalArgumentError(f"{path}: no [[streams]] tables (each with at least stream and output)")
        groups = body.pop("groups", [])
        if not isinstance(groups, list) or not all(isinstance(group, dict) for group in groups):
            raise IllegalArgumentError(f"{path}: groups: not a list of [[groups]] tables")
        return cls(path, body, tables, groups)

    def group(self, name: str) -> StreamGroup:
        """The group ``name``, checked: its fields, its streams, and that none of them is in
        another group too (two group runs would then contend for its leases every hour)."""
        names = [table.get("name") for table in self.group_tables]
        if name not in names:
            have = ", ".join(sorted(str(n) for n in names)) or "none"
            raise IllegalArgumentError(f"{self.path}: no group {name!r} (its [[groups]]: {have})")
        table = self.group_tables[names.index(name)]
        said = f"{self.path}: group {name!r}"
        unknown = sorted(set(table) - set(GROUP_FIELDS))
        if unknown:
            raise IllegalArgumentError(f"{said}: {not_a_setting(unknown[0], GROUP_FIELDS)}")
        streams = table.get("streams")
        if not isinstance(streams, list) or not streams or not all(isinstance(s, str) and s for s in streams):
            raise IllegalArgumentError(f"{said}: streams: a list of the streams of its [[streams]] entries")
        named = [stream_name(stream) for stream in streams]
        if len(set(named)) < len(named):
            twice = next(stream for stream in named if named.count(stream) > 1)
            raise IllegalArgumentError(f"{said}: streams: {twice!r} is listed twice")
        for other in self.group_tables:
            theirs = {stream_name(stream) for stream in other.get("streams") or () if isinstance(stream, str)}
            shared = sorted(set(named) & theirs) if other is not table else []
            if shared:
                raise IllegalArgumentError(f"{said}: stream {shared[0]!r} is in group {other.get('name')!r} too")
        schedule = table.get("schedule", defaults.SCHEDULE)
        if not isinstance(schedule, str) or not schedule.strip():
            raise IllegalArgumentError(f"{said}: schedule: a cron expression or a preset such as @hourly")
        return StreamGroup(name, tuple(stream_name(stream) for stream in streams), schedule)

    def entries(
        self,
        make: Callable[..., T],
        settings: Collection[str],
        *,
        key: Callable[[T], str] = str,
        only: Collection[str] | None = None,
    ) -> tuple[list[T], list[BrokenEntry]]:
        """The entries as ``make(**table)`` made them, and the broken ones. ``settings``: the
        names an entry may use; ``make`` raises IllegalArgumentError (or TypeError, for a value
        of the wrong type) naming the field; ``key``: what a stream listed twice has twice;
        ``only``: the entries of these streams, by name (a group's), the others left unread."""
        entries: list[T] = []
        broken: list[BrokenEntry] = []
        seen: set[str] = set()
        for number, table in enumerate(self.tables, start=1):
            unknown = sorted(set(table) - set(settings))
            missing = [name for name in REQUIRED if name not in table]
            named = table.get("stream")
            stream = named if isinstance(named, str) else ""
            if only is not None and stream_name(stream) not in only:
                continue
            try:
                if unknown:
                    raise not_a_setting(unknown[0], settings)
                if missing:
                    raise IllegalArgumentError(f"{missing[0]}: missing")
                made = make(**table)
                if key(made) in seen:
                    raise IllegalArgumentError(f"stream: {stream!r} is listed twice")
            except (IllegalArgumentError, TypeError) as exc:
                broken.append(BrokenEntry(number, stream, str(exc)))
                continue
            seen.add(key(made))
            entries.append(made)
        return entries, broken


__all__ = [
    "ENTRY_FIELDS",
    "ORCHESTRATION",
    "BrokenEntry",
    "StreamGroup",
    "StreamsFile",
    "entry_settings",
    "stream_name",
]
