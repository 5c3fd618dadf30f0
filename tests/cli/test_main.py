"""Bad input through `kinesis-batch` (``cli.main`` in-process): one line on stderr, no traceback, a
non-zero exit, and the lease table exactly as it was.

Most cases fail before Spark starts. Two need a committed run first (an unwritable output root, a
malformed lease item); they use the shared Spark session.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from devkit.stack import free_port

from kinesis_batch import Checkpoint, DynamoDBCheckpointStore, Lease, LeaseStore
from kinesis_batch._backoff import Backoff
from kinesis_batch.cli import main
from kinesis_batch.config import RunConfig
from kinesis_batch.parsers import default_table
from kinesis_batch.run import CatchUpRun
from tests.streams import StreamFactory, put

EXIT_USAGE, EXIT_RETRYABLE = 2, 4


@dataclass(frozen=True)
class Seeded:
    """A real stream whose lease table holds a checkpoint at a real sequence number."""

    name: str
    table: str
    store: LeaseStore

    def leases(self) -> dict[str, Lease]:
        return {lease.lease_key: lease for lease in self.store.list_leases()}


@pytest.fixture
def seeded(kinesis: Any, dynamodb: Any, streams: StreamFactory) -> Seeded:
    """No Spark needed: the checkpoint a committed run would leave, written through the stores."""
    name = streams.create(shards=1)
    put(kinesis, name, 3)
    first = kinesis.put_record(StreamName=name, Data=b"3", PartitionKey="key-3")
    put(kinesis, name, 3, start=4)
    store = LeaseStore(dynamodb, default_table(name))
    DynamoDBCheckpointStore(store).create_checkpoint_store_if_not_exists()
    # As a run leaves it: a run's lease items carry lineageDepth (what tells them from a KCL lease).
    lease = Lease(first["ShardId"], checkpoint=Checkpoint.at(first["SequenceNumber"]), lineage_depth=0)
    assert store.create_lease_if_not_exists(lease)
    return Seeded(name, store.table_name, store)


def committed_run(kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, output: Path) -> str:
    """A stream read by one successful run (its checkpoints are sequence numbers); returns its name."""
    name = streams.create(shards=2)
    sent = put(kinesis, name, 100)
    config = RunConfig.of(stream=name, output=str(output), worker_id="first")
    report = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run()
    assert report.published and report.records == len(sent)
    return name


def fails(capsys: pytest.CaptureFixture[str], *argv: str, code: int = EXIT_USAGE) -> str:
    """Run the command; check the exit code and the one error line on stderr, and return that line."""
    try:
        exit_code = main(list(argv))
    except SystemExit as exit_:  # argparse's way out
        exit_code = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{captured.err}"
    assert lines[0].startswith("kinesis-batch: error: "), lines[0]
    assert exit_code == code, f"exit {exit_code}: {lines[0]}"
    assert captured.out == ""
    return lines[0]


def raw_items(dynamodb: Any, table: str) -> dict[str, Any]:
    """The lease items exactly as stored (for tables LeaseStore cannot parse)."""
    items = dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
    return {item["leaseKey"]["S"]: item for item in items}


# -- unknown stream ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "status"])
def test_unknown_stream_is_named(
    command: str, seeded: Seeded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = seeded.leases()
    missing = f"{seeded.name}-missing"
    output = ["--output", str(tmp_path / "out")] if command == "run" else []
    line = fails(capsys, command, "--stream", missing, "--table", seeded.table, *output)
    assert f"stream {missing!r} does not exist" in line
    assert seeded.leases() == before


def test_run_on_an_unknown_stream_creates_no_tables(
    dynamodb: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tables = dynamodb.list_tables()["TableNames"]
    line = fails(capsys, "run", "--stream", "no-such-stream", "--output", str(tmp_path / "out"))
    assert "stream 'no-such-stream' does not exist" in line
    assert dynamodb.list_tables()["TableNames"] == tables


# -- bad arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("position", "says"),
    [
        ("yesterday", "'yesterday' is not one of trim_horizon, latest, at_timestamp=ISO8601"),
        ("at_timestamp=", "'at_timestamp=' is not one of trim_horizon, latest, at_timestamp=ISO8601"),
        ("at_timestamp=not-a-time", "'not-a-time' is not an ISO 8601 time"),
        ("latest=x", "'latest=x' is not one of trim_horizon, latest, at_timestamp=ISO8601"),
    ],
    ids=["yesterday", "at_timestamp-empty", "at_timestamp-not-a-time", "latest-with-argument"],
)
def test_invalid_initial_position(
    position: str, says: str, seeded: Seeded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = seeded.leases()
    argv = ["run", "--stream", seeded.name, "--output", str(tmp_path / "out"), "--initial-position", position]
    line = fails(capsys, *argv)
    assert "--initial-position" in line and says in line
    assert seeded.leases() == before


@pytest.mark.parametrize("until", ["soon", "2026-13-45T00:00:00Z", ""], ids=["word", "month-13", "empty"])
def test_invalid_until(until: str, seeded: Seeded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = seeded.leases()
    line = fails(capsys, "run", "--stream", seeded.name, "--output", str(tmp_path / "out"), "--until", until)
    assert f"--until: {until!r} is not an ISO 8601 time" in line
    assert seeded.leases() == before


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--stream", "bad name!", "is not a Kinesis stream name"),
        ("--stream", "s" * 129, "is not a Kinesis stream name"),
        ("--table", "ab", "is not a DynamoDB table name"),
        ("--table", "bad/table", "is not a DynamoDB table name"),
        ("--run-id", "../outside", "is not a run id"),
        ("--run-id", ".hidden", "is not a run id"),
    ],
    ids=["stream-space", "stream-too-long", "table-too-short", "table-slash", "run-id-path", "run-id-dot"],
)
def test_invalid_stream_table_or_run_id(
    option: str, value: str, says: str, seeded: Seeded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = seeded.leases()
    names = {"--stream": seeded.name, option: value}
    line = fails(capsys, "run", *(a for pair in names.items() for a in pair), "--output", str(tmp_path / "out"))
    assert f"{option}: {value!r} {says}" in line
    assert seeded.leases() == before


def test_status_names_an_invalid_stream_name(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "status", "--stream", "bad name!")
    assert "--stream: 'bad name!' is not a Kinesis stream name" in line


@pytest.mark.parametrize("seconds", ["0", "9.5", "86400.5", "-10", "nan", "inf"])
def test_lease_seconds_out_of_range(
    seconds: str, seeded: Seeded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = seeded.leases()
    line = fails(capsys, "run", "--stream", seeded.name, "--output", str(tmp_path / "out"), "--lease-seconds", seconds)
    assert "--lease-seconds" in line and "is not in 10..86400" in line
    assert seeded.leases() == before


def test_a_value_argparse_rejects_is_one_line_too(seeded: Seeded, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "run", "--stream", seeded.name, "--output", "out", "--lease-seconds", "ten")
    assert "--lease-seconds" in line


# -- unreachable endpoints -----------------------------------------------------------------------


@pytest.mark.parametrize("service", ["KINESIS", "DYNAMODB"])
@pytest.mark.parametrize("command", ["run", "status"])
def test_unreachable_endpoint(
    command: str,
    service: str,
    seeded: Seeded,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    before = seeded.leases()
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv(f"AWS_ENDPOINT_URL_{service}", closed)
    monkeypatch.setattr(Backoff, "delay", lambda self, attempt, rand=None: 0.0)  # every try, none of the waits
    output = ["--output", str(tmp_path / "out")] if command == "run" else []
    line = fails(capsys, command, "--stream", seeded.name, *output, code=EXIT_RETRYABLE)
    assert "cannot reach the endpoint" in line and closed in line
    assert seeded.leases() == before  # seeded.store's client was built before the endpoint moved


# -- the lease table -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["status", "history"])
def test_a_stream_without_a_lease_table(
    command: str, kinesis: Any, dynamodb: Any, streams: StreamFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    name = streams.create(shards=1)
    tables = dynamodb.list_tables()["TableNames"]
    line = fails(capsys, command, "--stream", name)
    assert line.endswith(f"lease table {default_table(name)!r} does not exist (has a run happened for {name!r}?)")
    assert dynamodb.list_tables()["TableNames"] == tables


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_history_of_a_run_that_committed_nothing_is_one_line(
    json_flag: list[str], seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, "history", "--stream", seeded.name, "--run", "nosuchrun", *json_flag)
    assert line == (
        f"kinesis-batch: error: --run nosuchrun: no batch of that run was committed in {seeded.table} "
        f"(kinesis-batch history --stream {seeded.name} --runs lists the runs that were)"
    )


def test_history_before_any_commit_says_so(seeded: Seeded, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--stream", seeded.name]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"no batch committed in {seeded.table} yet: each run's checkpoint moves appear here once it commits"
    ]


def test_unwritable_output_root_moves_no_checkpoint(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    name = committed_run(kinesis, dynamodb, streams, spark, tmp_path / "out")
    store = LeaseStore(dynamodb, default_table(name))
    before = {lease.lease_key: lease for lease in store.list_leases()}
    assert len(before) == 2 and not any(lease.checkpoint.is_start for lease in before.values())
    put(kinesis, name, 50, start=100)  # new data the failing run must not account for
    regular_file = tmp_path / "a-file"
    regular_file.write_text("not a directory")
    root = regular_file / "out"

    line = fails(capsys, "run", "--stream", name, "--output", str(root), "--move-output")  # moved: its own check
    assert "not writable" in line and str(root) in line
    assert {lease.lease_key: lease for lease in store.list_leases()} == before


def test_malformed_lease_item_is_named(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    output = tmp_path / "out"
    name = committed_run(kinesis, dynamodb, streams, spark, output)
    table = default_table(name)
    items = raw_items(dynamodb, table)
    key = sorted(items)[0]
    dynamodb.put_item(TableName=table, Item={**items[key], "checkpoint": {"N": "5"}})
    corrupted = raw_items(dynamodb, table)

    for argv in (["run", "--stream", name, "--output", str(output)], ["status", "--stream", name]):
        line = fails(capsys, *argv)
        assert "malformed" in line and repr(key) in line and "checkpoint" in line, line
        assert raw_items(dynamodb, table) == corrupted


# -- output formats: bad input and bad state, said before anything is read or committed ---------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--format", "delta", "--output", "s3://no-such-bucket-here/t"), "bucket no-such-bucket-here does not exist"),
        (("--format", "iceberg", "--output", "lake.t", "--catalog", "nowhere"), "no such pyiceberg catalog"),
        (("--format", "iceberg", "--output", "clicks"), "an Iceberg table is named NAMESPACE.TABLE"),
        (("--format", "parquet", "--output", "s3://bucket/out"), "S3 has no atomic rename; write to S3 with --format"),
        (("--format", "delta", "--output", "/tmp/t", "--catalog", "c"), "--catalog goes with --format iceberg"),
    ],
    ids=["missing-bucket", "unknown-catalog", "iceberg-without-namespace", "parquet-on-s3", "catalog-not-iceberg"],
)
def test_bad_output_is_one_line_and_moves_nothing(
    args: tuple[str, ...], says: str, seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    before = seeded.leases()
    line = fails(capsys, "run", "--stream", seeded.name, "--table", seeded.table, *args)
    assert says in line
    assert seeded.leases() == before


@pytest.mark.parametrize("format", ["delta", "iceberg"])
def test_an_existing_table_with_other_columns_is_one_line_and_gets_no_commit(
    format: str, seeded: Seeded, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa

    from tests.output.support import output_args, sink_of

    args = output_args(format, "local", tmp_path, monkeypatch)
    theirs = pa.schema([("id", pa.int64()), ("data", pa.string())])
    if format == "delta":
        from deltalake import DeltaTable

        DeltaTable.create(args[3], schema=theirs)
        commits = lambda: DeltaTable(args[3]).version()  # noqa: E731
    else:
        catalog = sink_of(args).catalog  # type: ignore[attr-defined]
        catalog.create_namespace("lake")
        catalog.create_table(args[3], schema=theirs)
        commits = lambda: len(catalog.load_table(args[3]).snapshots())  # noqa: E731
    before, made = seeded.leases(), commits()
    line = fails(capsys, "run", "--stream", seeded.name, "--table", seeded.table, *args)
    assert "exists with other columns than kinesis-batch writes" in line
    assert re.search(r"data is (large_)?string, not binary", line), line
    assert seeded.leases() == before
    assert commits() == made, "a commit was made to a table of the wrong shape"


@pytest.mark.parametrize("verbose", [False, True], ids=["log-file", "verbose"])
def test_an_unexpected_error_is_one_line_and_its_traceback_is_where_the_line_says(
    verbose: bool, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinesis_batch import cli

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again

    def broken() -> int:
        raise KeyError("a bug's own words")

    code = cli.exit_code(broken, verbose=verbose)
    err = capsys.readouterr().err
    *traceback, line = err.strip().splitlines()
    assert code == 1 and line.startswith('kinesis-batch: error: KeyError: "a bug\'s own words" ('), err
    if verbose:
        assert "traceback above" in line and traceback[0] == "Traceback (most recent call last):"
        assert "in broken" in err
    else:
        assert not traceback, err
        path = Path(line.split("traceback in ")[1].split(";")[0])
        assert path.parent == tmp_path / "kinesis-batch" and "in broken" in path.read_text()
