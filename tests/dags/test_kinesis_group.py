"""A group's DAG, end to end with dag.test() on the local stack: every stream of the group in one
run, a task per stream for its outcome; a broken stream's task fails with its own line while the
others land exactly once; the streams' own DAGs are left to run by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.dags.test_kinesis_streams import AHEAD, dagbag_of, states
from tests.groups import small_group
from tests.streams import StreamFactory


@pytest.mark.contract("airflow", why="the group DAG run with dag.test() on this Airflow")
def test_a_groups_dag_runs_its_streams_in_one_run_and_a_broken_stream_fails_only_its_own_task(
    airflow_home: Path, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from kinesis_batch.airflow.group import stream_task_id  # airflow, once airflow_home has set it up

    group = small_group(kinesis, streams, tmp_path)
    plain, table, broken = group.streams

    dagbag = dagbag_of(group.path, monkeypatch)

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
    group.assert_landed_exactly_once()
