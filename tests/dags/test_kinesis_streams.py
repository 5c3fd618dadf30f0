"""One catch-up DAG per stream of a streams file, end to end with dag.test() on the local stack;
a broken entry fails only its own DAG; the end-of-run lag check passes on a caught-up stream and
fails on one left behind on purpose."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.airflow.streams import BrokenEntry, StreamEntry, read_streams
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.settings import StreamSettings
from tests.conftest import DAGS
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put

AHEAD = timedelta(minutes=1)  # see test_kinesis_catchup.py


def dagbag_of(streams_file: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("AIRFLOW__KINESIS_BATCH__STREAMS_FILE", str(streams_file))
    return DagBag(dag_folder=str(DAGS))


def states(dag_run: Any) -> dict[str, str]:
    return {ti.task_id: ti.state for ti in dag_run.get_task_instances()}


@pytest.mark.contract("airflow", why="DAGs made from a streams file on this Airflow")
def test_three_streams_give_three_dags_that_run_and_a_broken_entry_fails_only_its_own(
    airflow_home: Path, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    names = [streams.create(shards=1) for _ in range(3)]
    sent = {name: put(kinesis, name, 20 + i) for i, name in enumerate(names)}
    entries = "".join(
        f'[[streams]]\nstream = "{name}"\noutput = "{tmp_path / name}"\nschedule = "@daily"\n'
        f"lag_threshold_seconds = 600\n\n"
        for name in names
    )
    broken = '[[streams]]\nstream = "orders"\noutput = "s3://lake/orders"\n'  # parquet cannot publish on S3
    streams_file = tmp_path / "streams.toml"
    streams_file.write_text(entries + broken)

    dagbag = dagbag_of(streams_file, monkeypatch)

    per_stream = [dag_id for dag_id in dagbag.dag_ids if dag_id.startswith("kinesis_catchup__")]
    assert sorted(per_stream) == sorted(f"kinesis_catchup__{name}" for name in names)
    (error,) = dagbag.import_errors.values()
    assert error.count("\n") == 0, error
    assert f"{streams_file}: stream 4 (orders): output s3://lake/orders: the parquet format publishes" in error
    assert dagbag.get_dag("kinesis_backfill").params.get_param("stream").schema["examples"] == names
    for name in names:
        dag = dagbag.get_dag(f"kinesis_catchup__{name}")
        assert {"kinesis-batch", f"stream:{name}", "format:parquet"} <= set(dag.tags)
        assert name in (dag.doc_md or "")
        (outlet,) = dag.get_task("publish").outlets
        assert outlet.uri == f"file://{tmp_path / name}"

        dag_run = dag.test(logical_date=datetime.now(UTC) + AHEAD)

        assert dag_run.state == "success", states(dag_run)
        assert states(dag_run)["check_lag"] == "success"  # caught up
        assert_exactly_once(read_output(tmp_path / name), sent[name])


def test_the_lag_check_fails_on_a_stream_left_behind_with_the_shards_and_time_to_trimming(
    dagbag: Any, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = streams.create(shards=1)
    put(kinesis, name, 10)
    dag = dagbag.get_dag("kinesis_catchup")
    conf = {"stream": name, "output": str(tmp_path / "out"), "lag_threshold_seconds": 1}
    time.sleep(2)
    # The run reads up to its data interval's end, an hour ago: the records stay unread.
    dag_run = dag.test(logical_date=datetime.now(UTC) - timedelta(hours=1), run_conf=conf)

    assert states(dag_run)["commit_checkpoints"] == "success" and states(dag_run)["check_lag"] == "failed"
    assert dag_run.state == "failed"
    assert read_output(tmp_path / "out") == {}
    said = capsys.readouterr()
    assert re.search(
        rf"{name} is behind: 1 shard over the 1s lag threshold: shardId-000000000000 \d+s behind "
        r"\(trimmed in 24\.0h\)",
        said.out + said.err,
    ), said.out[-3000:]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('stream = "a"', "output: missing"),
        ('output = "/x"', "stream: missing"),
        ('stream = "a"\noutput = "/x"\nformt = "delta"', "formt: not a setting"),
        ('stream = "a"\noutput = "/x"\nformat = "csv"', "format: 'csv' is not one of parquet, delta, iceberg"),
        ('stream = "a b"\noutput = "/x"', "stream:"),
        ('stream = "a"\noutput = "/x"\nlease_seconds = 5', "lease_seconds: 5 is not in 10..86400"),
        ('stream = "a"\noutput = "/x"\nlag_threshold_seconds = "1h"', "lag_threshold_seconds: '1h' is not a number"),
        ('stream = "a"\noutput = "/x"\nread_limits = "fast"', "read_limits 'fast': use kinesis"),
    ],
    ids=["no-output", "no-stream", "unknown-field", "format", "stream-name", "lease", "threshold", "read-limits"],
)
def test_a_broken_entry_is_named_with_its_field_and_the_others_are_kept(entry: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "streams.toml"
    path.write_text(f'[[streams]]\nstream = "good"\noutput = "/good"\n\n[[streams]]\n{entry}\n')
    good, broken = read_streams(path)
    assert good == [StreamEntry(StreamSettings("good", "/good"))]
    (only,) = broken
    assert isinstance(only, BrokenEntry) and only.number == 2
    assert only.message.startswith(says), only.message


def test_no_streams_file_makes_no_dags_and_a_file_without_streams_says_so(tmp_path: Path) -> None:
    assert read_streams(tmp_path / "absent.toml") == ([], [])
    (tmp_path / "empty.toml").write_text("[aws]\n")
    with pytest.raises(IllegalArgumentError, match=r"no \[\[streams\]\] tables"):
        read_streams(tmp_path / "empty.toml")
