"""A group's DAG, end to end with dag.test() on the local stack: every stream of the group in one
run, a task per stream for its outcome; a broken stream's task fails with its own line while the
others land exactly once; the streams' own DAGs are left to run by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from deltalake import write_deltalake

from tests.dags.test_kinesis_streams import AHEAD, dagbag_of, states
from tests.output.support import read_rows, sink_of
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put


def test_a_groups_dag_runs_its_streams_in_one_run_and_a_broken_stream_fails_only_its_own_task(
    airflow_home: Path, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    import pyarrow as pa

    from kinesis_batch.airflow.group import stream_task_id  # airflow, once airflow_home has set it up

    plain, table, broken = (streams.create(shards=2) for _ in range(3))
    sent = {plain: put(kinesis, plain, 40), table: put(kinesis, table, 30)}
    put(kinesis, broken, 5)
    write_deltalake(str(tmp_path / "theirs"), pa.table({"a": [1]}))  # not a parquet output's
    streams_file = tmp_path / "streams.toml"
    streams_file.write_text(
        f'[[streams]]\nstream = "{plain}"\noutput = "{tmp_path / "plain"}"\nread_limits = "none"\n\n'
        f'[[streams]]\nstream = "{table}"\noutput = "{tmp_path / "table"}"\nformat = "delta"\n\n'
        f'[[streams]]\nstream = "{broken}"\noutput = "{tmp_path / "theirs"}"\n\n'
        f'[[groups]]\nname = "small"\nstreams = ["{plain}", "{table}", "{broken}"]\nschedule = "@hourly"\n'
    )

    dagbag = dagbag_of(streams_file, monkeypatch)

    assert not dagbag.import_errors, dagbag.import_errors
    dag = dagbag.get_dag("kinesis_group__small")
    assert {"kinesis-batch", "group:small", f"stream:{plain}"} <= set(dag.tags)
    assert dagbag.get_dag(f"kinesis_catchup__{plain}").schedule is None  # by hand: the group reads it
    tasks = {stream_task_id(name) for name in (plain, table, broken)}
    assert set(dag.task_ids) == {"run_group", *tasks}

    dag_run = dag.test(logical_date=datetime.now(UTC) + AHEAD)

    said = states(dag_run)
    assert said["run_group"] == "success", said
    assert (said[stream_task_id(plain)], said[stream_task_id(table)]) == ("success", "success"), said
    assert said[stream_task_id(broken)] == "failed", said
    assert f"{broken}: --output {tmp_path / 'theirs'} holds a Delta table" in capsys.readouterr().out
    assert_exactly_once(read_output(tmp_path / "plain"), sent[plain])
    output = ("--format", "delta", "--output", str(tmp_path / "table"))
    assert_exactly_once(read_rows(sink_of(output, app=f"kinesis-batch-{table}", stream=table)), sent[table])
