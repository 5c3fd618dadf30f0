"""``run --streams-file F --group G`` as a user gets it wrong: a stream's flag beside the streams
file, half of the pair, a run with neither --stream nor a group, an entry that names its own
Spark. Each is one line with exit 2; a group's broken streams are each their own line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinesis_batch.cli import main
from tests.cli.test_main import fails


def streams_file(tmp_path: Path, *entries: str, members: str = '["a"]') -> str:
    path = tmp_path / "streams.toml"
    tables = "".join(f"[[streams]]\n{entry}\n\n" for entry in entries)
    path.write_text(f'{tables}[[groups]]\nname = "g"\nstreams = {members}\n')
    return str(path)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--format", "delta"), "--format: a group's streams take their settings from their entries"),
        (("--lease-seconds", "30"), "--lease-seconds: a group's streams take their settings"),
        (("--run-id", "r1"), "--run-id: a stream's alone, not a group's (run that stream with --stream)"),
        (("--move-output",), "--move-output: a stream's alone, not a group's"),
        (("--emr-serverless-application", "app"), "--emr-serverless-application: a stream's alone"),
    ],
    ids=["format", "lease-seconds", "run-id", "move-output", "emr-serverless"],
)
def test_a_streams_flag_beside_a_group_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], says: str
) -> None:
    path = streams_file(tmp_path, 'stream = "a"\noutput = "/a"')
    line = fails(capsys, "run", "--streams-file", path, "--group", "g", *extra, code=2)
    assert line.startswith(f"kinesis-batch: error: {says}"), line


def test_half_of_the_pair_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = streams_file(tmp_path, 'stream = "a"\noutput = "/a"')
    said = "run: --streams-file and --group go together"
    assert said in fails(capsys, "run", "--streams-file", path, code=2)
    assert said in fails(capsys, "run", "--group", "g", code=2)


def test_a_run_of_no_stream_and_no_group_names_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "run", "--output", "/tmp/x", code=2)
    assert line == (
        "kinesis-batch: error: run: the following arguments are required: --stream (or --streams-file and --group)"
    )


def test_a_group_that_is_not_in_the_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = streams_file(tmp_path, 'stream = "a"\noutput = "/a"')
    line = fails(capsys, "run", "--streams-file", path, "--group", "nope", code=2)
    assert line == f"kinesis-batch: error: {path}: no group 'nope' (its [[groups]]: g)"


def test_each_broken_stream_of_a_group_is_its_own_line_and_json_says_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = streams_file(
        tmp_path,
        'stream = "a"\noutput = "/a"\nspark_master = "local[2]"',
        'stream = "b"\noutput = "/b"\nlease_seconds = -1',
        'stream = "c"\noutput = "/c"\nschedule = "@daily"\nsmall_file_mb = 4\nfromat = "delta"',
        members='["a", "b", "c", "d"]',
    )
    assert main(["run", "--streams-file", path, "--group", "g"]) == 2
    captured = capsys.readouterr()
    errors = captured.err.splitlines()
    assert errors == [
        f"kinesis-batch: error: a: {path}: a: spark_master: a group's streams share one Spark, the group's run's "
        "(run this stream alone for its own)",
        f"kinesis-batch: error: b: {path}: stream 2 (b): lease_seconds: -1 is not in 10..86400",
        f"kinesis-batch: error: c: {path}: stream 3 (c): fromat: not a setting (did you mean format?)",
        f"kinesis-batch: error: d: {path}: group 'g': 'd' has no [[streams]] entry",
    ]
    assert captured.out.splitlines() == [
        "group g: 0 of 4 streams ran, 0 records in " + captured.out.split(" in ")[1].strip()
    ]

    assert main(["run", "--streams-file", path, "--group", "g", "--json"]) == 2
    body = json.loads(capsys.readouterr().out)
    assert [(s["stream"], s["exit_code"]) for s in body["streams"]] == [("a", 2), ("b", 2), ("c", 2), ("d", 2)]
    assert body["streams"][3]["error"] == f"{path}: group 'g': 'd' has no [[streams]] entry"
