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
