"""A streams file read entry by entry: a broken entry is one line naming its file, its number,
its stream (wherever it names one) and the field; the good ones still load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.settings import NAMES, StreamSettings
from kinesis_batch.streams_file import StreamsFile


def _read(tmp_path: Path, *entries: str) -> tuple[list[StreamSettings], list[str]]:
    path = tmp_path / "streams.toml"
    path.write_text("".join(f"[[streams]]\n{entry}\n\n" for entry in entries))

    def make(**table: Any) -> StreamSettings:
        return StreamSettings.from_mapping(table)

    good, broken = StreamsFile.read(path).entries(make, NAMES, key=lambda settings: settings.stream)
    return good, [entry.describe(path) for entry in broken]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (
            'stream = "b"\noutput = "/b"\nlease_secs = 30',
            "stream 2 (b): lease_secs: not a setting (did you mean lease_seconds?)",
        ),
        ('stream = "b"\noutput = "/b"\nzzz = 1', "stream 2 (b): zzz: not a setting (the settings: "),
        ('stream = "b"', "stream 2 (b): output: missing"),
        ('output = "/b"', "stream 2: stream: missing"),
        ('stream = "a"\noutput = "/elsewhere"', "stream 2 (a): stream: 'a' is listed twice"),
        (
            'stream = "b"\noutput = "/b"\nspark_remote = "http://h:15002"',
            "stream 2 (b): --spark-remote: 'http://h:15002'",
        ),
    ],
    ids=["near-miss", "unknown", "no-output", "no-stream", "twice", "connect-url"],
)
def test_a_broken_entry_is_one_line_naming_its_stream_and_field(tmp_path: Path, entry: str, says: str) -> None:
    good, broken = _read(tmp_path, 'stream = "a"\noutput = "/a"', entry)

    assert [settings.stream for settings in good] == ["a"]
    (line,) = broken
    assert line.startswith(f"{tmp_path / 'streams.toml'}: {says}"), line
    assert "\n" not in line


def test_a_file_without_streams_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "streams.toml"
    path.write_text("[aws]\nregion_name = 'eu-west-1'\n")
    with pytest.raises(IllegalArgumentError, match=r"streams.toml: no \[\[streams\]\] tables"):
        StreamsFile.read(path)


def _grouped(tmp_path: Path, groups: str) -> StreamsFile:
    path = tmp_path / "streams.toml"
    entries = "".join(f'[[streams]]\nstream = "{s}"\noutput = "/{s}"\n\n' for s in "abc")
    path.write_text(entries + groups)
    return StreamsFile.read(path)


def test_a_group_is_read_with_its_streams_in_order_and_its_schedule(tmp_path: Path) -> None:
    read = _grouped(tmp_path, '[[groups]]\nname = "g"\nstreams = ["c", "a"]\nschedule = "*/30 * * * *"\n')
    group = read.group("g")
    assert (group.name, group.streams, group.schedule) == ("g", ("c", "a"), "*/30 * * * *")
    assert "groups" not in read.sections  # Dagster reads the other tables as resources
    assert _grouped(tmp_path, '[[groups]]\nname = "h"\nstreams = ["b"]\n').group("h").schedule == "@hourly"


def test_only_reads_the_entries_of_a_groups_streams(tmp_path: Path) -> None:
    read = _grouped(tmp_path, '[[groups]]\nname = "g"\nstreams = ["c", "a"]\n')

    def make(**table: Any) -> StreamSettings:
        return StreamSettings.from_mapping(table)

    good, broken = read.entries(make, NAMES, key=lambda settings: settings.stream, only=("c", "a"))
    assert sorted(settings.stream for settings in good) == ["a", "c"] and not broken


@pytest.mark.parametrize(
    ("groups", "says"),
    [
        ("", "no group 'g' (its [[groups]]: none)"),
        ('[[groups]]\nname = "h"\nstreams = ["a"]\n', "no group 'g' (its [[groups]]: h)"),
        ('[[groups]]\nname = "g"\nstreams = []\n', "group 'g': streams: a list of the streams"),
        ('[[groups]]\nname = "g"\nstreams = "a"\n', "group 'g': streams: a list of the streams"),
        ('[[groups]]\nname = "g"\nstreams = ["a", "a"]\n', "group 'g': streams: 'a' is listed twice"),
        ('[[groups]]\nname = "g"\nstream = ["a"]\n', "group 'g': stream: not a setting (did you mean streams?)"),
        (
            '[[groups]]\nname = "g"\nstreams = ["a", "b"]\n[[groups]]\nname = "h"\nstreams = ["b"]\n',
            "group 'g': stream 'b' is in group 'h' too",
        ),
        ('[[groups]]\nname = "g"\nstreams = ["a"]\nschedule = ""\n', "group 'g': schedule: a cron expression"),
    ],
    ids=["no-groups", "another", "empty", "not-a-list", "twice", "near-miss", "in-two", "no-schedule"],
)
def test_a_bad_group_is_one_line_naming_the_file_and_the_group(tmp_path: Path, groups: str, says: str) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        _grouped(tmp_path, groups).group("g")
    assert str(raised.value).startswith(f"{tmp_path / 'streams.toml'}: {says}"), raised.value


def test_groups_that_are_not_tables_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "streams.toml"
    path.write_text('groups = ["g"]\n[[streams]]\nstream = "a"\noutput = "/a"\n')
    with pytest.raises(IllegalArgumentError, match="groups: not a list of"):
        StreamsFile.read(path)


def test_the_orchestrators_own_fields_are_theirs_exactly() -> None:
    """ORCHESTRATION names what Airflow's and Dagster's entries add: a command-line group run leaves
    those to them, and refuses anything else that is not a stream setting."""
    pytest.importorskip("dagster")
    from kinesis_batch.airflow.streams import OWN as AIRFLOW_OWN
    from kinesis_batch.dagster.defs import OWN as DAGSTER_OWN
    from kinesis_batch.streams_file import ORCHESTRATION

    assert sorted(ORCHESTRATION) == sorted(set(AIRFLOW_OWN) | set(DAGSTER_OWN))


def test_a_group_and_its_entries_may_name_a_stream_by_its_arn(tmp_path: Path) -> None:
    arn = "arn:aws:kinesis:eu-west-1:222222222222:stream/orders"
    path = tmp_path / "streams.toml"
    path.write_text(
        f'[[streams]]\nstream = "{arn}"\noutput = "/o"\n\n[[streams]]\nstream = "b"\noutput = "/b"\n\n'
        f'[[groups]]\nname = "g"\nstreams = ["orders", "b"]\n[[groups]]\nname = "h"\nstreams = ["{arn}"]\n'
    )
    read = StreamsFile.read(path)
    with pytest.raises(IllegalArgumentError, match="stream 'orders' is in group 'h' too"):
        read.group("g")
    with pytest.raises(IllegalArgumentError, match="stream 'orders' is in group 'g' too"):
        read.group("h")
    path.write_text(path.read_text().replace('streams = ["orders", "b"]', 'streams = ["b"]'))
    read = StreamsFile.read(path)
    assert read.group("h").streams == ("orders",)

    def make(**table: Any) -> StreamSettings:
        return StreamSettings.from_mapping(table)

    good, _ = read.entries(make, NAMES, key=lambda settings: settings.stream, only=("orders",))
    assert [(settings.stream, settings.stream_arn) for settings in good] == [("orders", arn)]
