"""The sink contract, proved on every format, locally and on S3 (moto): publish is atomic and
exactly once, a discarded batch can never be published, lookups answer from the output itself;
and the sink's interface is what the run's steps use (checked on their source)."""

from __future__ import annotations

import ast
from pathlib import Path

import pyarrow as pa
import pytest

from kinesis_batch import IllegalArgumentError, InvalidStateError, LeaseLostError
from kinesis_batch.aws import s3_settings
from kinesis_batch.output import Sink, Stored, open_sink
from tests.output.support import KIND_IDS, KINDS, commit_record, output_args, race, read_rows, sink_of, stage

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")


@pytest.fixture(params=KINDS, ids=KIND_IDS)
def sink(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Sink:
    format, where = request.param
    made = sink_of(output_args(format, where, tmp_path, monkeypatch))
    made.prepare()
    return made


def test_staged_batch_is_invisible_until_published_then_visible_whole(sink: Sink) -> None:
    record = commit_record("b-1")
    files = stage(sink, record)
    assert read_rows(sink) == {}
    assert sink.committed("b-1") is None

    assert sink.publish(record, files) is True
    rows = read_rows(sink)
    assert sorted(rows["shard_id"]) == ["shardId-0"] * 3 + ["shardId-1"] * 3
    assert set(rows["batch_id"]) == {"b-1"}
    assert sink.committed("b-1") == record


def test_publishing_again_commits_nothing_new(sink: Sink) -> None:
    record = commit_record("b-1")
    files = stage(sink, record)
    assert sink.publish(record, files) is True
    assert sink.publish(record, files) is False
    resumed = sink_of_same(sink)  # another process resuming the publish step
    assert resumed.publish(record, files) is False
    assert len(read_rows(sink)["data"]) == 6


def test_a_discarded_batch_can_never_be_published(sink: Sink) -> None:
    record = commit_record("b-1")
    files = stage(sink, record)
    late = sink_of_same(sink)  # the frozen run's own handle, opened before the discard
    assert sink.discard("b-1") is True
    assert sink.discard("b-1") is False
    with pytest.raises(LeaseLostError, match="discarded"):
        late.publish(record, files)
    assert read_rows(sink) == {}
    assert sink.committed("b-1") is None
    assert not sink.data("b-1").exists(), "a discarded batch's files are deleted"


def test_a_published_batch_is_not_discarded(sink: Sink) -> None:
    record = commit_record("b-1")
    files = stage(sink, record)
    sink.publish(record, files)
    assert sink.discard("b-1") is False
    assert len(read_rows(sink)["data"]) == 6
    assert sink.committed("b-1") == record


def test_nothing_staged_leaves_the_output_untouched_by_discard(sink: Sink) -> None:
    assert sink.discard("never-staged") is False
    assert sink.last_batch() is None


def test_publish_and_discard_racing_have_exactly_one_winner(sink: Sink) -> None:
    if sink.format == "iceberg" and type(sink.catalog).__name__ == "GlueCatalog":  # type: ignore[attr-defined]
        pytest.skip(
            "moto's Glue ignores UpdateTable's VersionId, the compare-and-swap AWS Glue enforces "
            "(a tight race cannot be refereed here; sequential fencing is tested above)"
        )
    for attempt in range(3 if sink.format != "parquet" else 20):
        record = commit_record(f"b-{attempt}")
        outcome = race(sink_of_same(sink), sink_of_same(sink), record, stage(sink, record))
        assert [outcome["published"], outcome["discarded"]].count(True) == 1, outcome
        assert (sink.committed(f"b-{attempt}") is not None) is outcome["published"]
    batches = read_rows(sink).get("batch_id", [])
    assert all(batches.count(b) == 6 for b in set(batches)), "a batch is in the output whole or not at all"


def test_last_batch_is_the_newest_published_one_of_this_consumer(sink: Sink) -> None:
    for batch in ("b-1", "b-2"):
        record = commit_record(batch)
        sink.publish(record, stage(sink, record))
    last = sink.last_batch()
    assert last is not None and last.batch_id == "b-2"


def test_batches_of_two_runs_published_in_either_order_are_both_kept(sink: Sink) -> None:
    first, second = commit_record("b-early", ("shardId-0",)), commit_record("b-late", ("shardId-1",))
    first_files, second_files = stage(sink, first), stage(sink, second)
    assert sink_of_same(sink).publish(second, second_files) is True
    assert sink_of_same(sink).publish(first, first_files) is True
    assert sink.committed("b-early") == first and sink.committed("b-late") == second


def sink_of_same(sink: Sink) -> Sink:
    """A second handle on the same output, as another process would open it."""
    if sink.format == "iceberg":
        catalog = sink.catalog  # type: ignore[attr-defined]
        return open_sink(
            "iceberg", sink.identifier, app="kinesis-batch-tests", stream="s", catalog=catalog.name, s3=s3_settings()
        )  # type: ignore[attr-defined]
    return open_sink(sink.format, sink.uri, app="kinesis-batch-tests", stream="s", s3=s3_settings())


# -- bad input and bad state: one line each, nothing created ------------------------------------


@pytest.mark.parametrize("format", ["delta", "iceberg"])
def test_an_existing_table_with_other_columns_is_refused(
    format: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = output_args(format, "local", tmp_path, monkeypatch)
    theirs = pa.schema([("id", pa.int64()), ("sequence_number", pa.int64())])
    if format == "delta":
        from deltalake import DeltaTable

        DeltaTable.create(args[3], schema=theirs)
    else:
        sink = sink_of(args)
        sink.catalog.create_namespace("lake")  # type: ignore[attr-defined]
        sink.catalog.create_table(args[3], schema=theirs)  # type: ignore[attr-defined]
    with pytest.raises(InvalidStateError, match=r"other columns .*sequence_number is int64, not string"):
        sink_of(args).prepare()


@pytest.mark.processes  # S3 is moto's
@pytest.mark.parametrize("format", ["delta", "iceberg"])
def test_a_missing_bucket_is_said_in_one_line(format: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if format == "delta":
        args: tuple[str, ...] = ("--format", "delta", "--output", "s3://no-such-bucket-here/t")
    else:
        monkeypatch.setenv("PYICEBERG_CATALOG__NOBUCKET__TYPE", "sql")
        monkeypatch.setenv("PYICEBERG_CATALOG__NOBUCKET__URI", f"sqlite:///{tmp_path}/c.db")
        monkeypatch.setenv("PYICEBERG_CATALOG__NOBUCKET__WAREHOUSE", "s3://no-such-bucket-here/wh")
        args = ("--format", "iceberg", "--output", "lake.t", "--catalog", "nobucket")
    with pytest.raises(InvalidStateError, match="bucket no-such-bucket-here does not exist"):
        sink_of(args).prepare()


def test_an_unknown_catalog_names_how_to_configure_one() -> None:
    with pytest.raises(
        IllegalArgumentError, match=r"--catalog nowhere: no such pyiceberg catalog.*PYICEBERG_CATALOG__"
    ):
        open_sink("iceberg", "lake.t", app="a", stream="s", catalog="nowhere")


@pytest.mark.parametrize("output", ["clicks", ".clicks", "lake.", "s3://b/t"])
def test_an_iceberg_table_needs_a_namespace(output: str) -> None:
    with pytest.raises(IllegalArgumentError, match=r"NAMESPACE\.TABLE"):
        open_sink("iceberg", output, app="a", stream="s")


def test_parquet_on_s3_is_refused_naming_the_table_formats() -> None:
    with pytest.raises(IllegalArgumentError, match=r"no atomic rename.*--format delta or --format iceberg"):
        open_sink("parquet", "s3://bucket/out", app="a", stream="s")


PACKAGE = Path(__file__).resolve().parents[2] / "kinesis_batch"
#: The run's steps: the modules that drive a batch from its plan to its commit.
RUN_STEPS = [
    *sorted((PACKAGE / "run").glob("*.py")),
    PACKAGE / "spark" / "job.py",
    PACKAGE / "serverless" / "step.py",
    PACKAGE / "serverless" / "attempt.py",
]


def _called(paths: list[Path]) -> set[str]:
    """Every attribute the modules name (a call's or a read's)."""
    return {
        node.attr for path in paths for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Attribute)
    }


def _public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_the_sinks_interface_is_what_the_runs_steps_use_and_nothing_more() -> None:
    used = _called(RUN_STEPS)
    assert _public(Sink) - used == set()  # each of the run's face is used by a step
    # and the steps use none of what only the stored face has (``format`` and ``exists``
    # name other things too, so they are not told apart here)
    assert (_public(Stored) - _public(Sink) - {"format", "exists"}) & used == set()
