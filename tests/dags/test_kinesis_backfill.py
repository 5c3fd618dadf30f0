"""The manual backfill DAG: from a history checkpoint into its own output, main checkpoints untouched."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.aws import dynamodb_client
from kinesis_batch.checkpoints.history import HistoryTable
from kinesis_batch.errors import LeaseTableNotFoundError
from kinesis_batch.output import open_sink
from kinesis_batch.parsers import default_table
from tests.changes.support import oracle, put_changes, shuffled_history, table_state
from tests.dags.test_kinesis_catchup import AHEAD
from tests.decoding.support import put_payloads
from tests.output.support import read_rows
from tests.runs import assert_exactly_once, data_of, read_output
from tests.streams import StreamFactory, put


def main_checkpoints(name: str) -> dict[str, str]:
    return {
        lease.lease_key: str(lease.checkpoint)
        for lease in LeaseStore(dynamodb_client(), default_table(name)).list_leases()
    }


@pytest.mark.contract("airflow", why="the backfill DAG run with dag.test() on this Airflow")
def test_backfill_from_the_checkpoint_before_a_run_rereads_it_into_its_own_output(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    first = put(kinesis, name, 150)
    main_output = tmp_path / "main"
    catchup = dagbag.get_dag("kinesis_catchup")
    conf = {"stream": name, "output": str(main_output)}
    assert catchup.test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf).state == "success"
    second = put(kinesis, name, 80, start=150)
    assert catchup.test(logical_date=datetime.now(UTC) + 2 * AHEAD, run_conf=conf).state == "success"

    history = HistoryTable(dynamodb_client(), default_table(name))
    entries = sorted(
        (e for shard in main_checkpoints(name) for e in history.for_shard(shard)), key=lambda e: e.committed_at
    )
    second_run = entries[-1].run_id
    before = main_checkpoints(name)
    backfill_output = tmp_path / "backfill"

    run = dagbag.get_dag("kinesis_backfill").test(
        run_conf={"stream": name, "start": f"run={second_run}", "output": str(backfill_output)}
    )

    assert run.state == "success", [(ti.task_id, ti.state) for ti in run.get_task_instances()]
    assert_exactly_once(read_output(backfill_output), second)
    assert main_checkpoints(name) == before
    assert sorted(data_of(read_output(main_output))) == sorted(first + second)


def test_backfill_rejects_an_unknown_run_without_retrying(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 10)
    run = dagbag.get_dag("kinesis_backfill").test(
        run_conf={"stream": name, "start": "run=no-such-run", "output": str(tmp_path / "b")}
    )
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    assert run.state == "failed"
    assert states["check_and_seed"] == ("failed", 1), states


def test_backfill_form_rejects_a_malformed_start(dagbag: Any, tmp_path: Path) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError, match=r"param start: 'yesterday' does not match"):
        dagbag.get_dag("kinesis_backfill").test(run_conf={"stream": "s", "start": "yesterday", "output": str(tmp_path)})


def test_backfill_of_a_stream_of_changes_from_its_form_merges_each_change_once(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    history = shuffled_history(12, 3, seed=11)  # reordered, duplicated, deleted
    put_changes(kinesis, name, history)
    table = tmp_path / "items"
    conf = {"stream": name, "start": "trim_horizon", "format": "delta", "output": str(table), "changes": "dynamodb"}

    run = dagbag.get_dag("kinesis_backfill").test(run_conf=conf)

    assert run.state == "success", [(ti.task_id, ti.state) for ti in run.get_task_instances()]
    sink = open_sink("delta", str(table), app=default_table(name), stream=name)
    assert table_state(read_rows(sink)) == oracle(history)
    with pytest.raises(LeaseTableNotFoundError):  # the backfill's own lease table, not the hourly one's
        main_checkpoints(name)


def test_backfill_of_a_routed_stream_from_its_form_lands_each_record_once_in_its_kinds_table(
    dagbag: Any, spark: Any, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    kinds = ["click", "view", None]
    put_payloads(kinesis, name, [json.dumps({"n": i, "type": kinds[i % 3]}).encode() for i in range(30)])
    root = tmp_path / "app"
    conf = {
        "stream": name,
        "start": "trim_horizon",
        "format": "delta",
        "output": f"{root}/{{route}}",
        "decode": "json",
        "route_by": "type",
    }

    run = dagbag.get_dag("kinesis_backfill").test(run_conf=conf)

    assert run.state == "success", [(ti.task_id, ti.state) for ti in run.get_task_instances()]

    def rows(route: str) -> dict[str, list[Any]]:
        return read_rows(open_sink("delta", f"{root}/{route}", app=default_table(name), stream=name))

    assert sorted(rows("click")["n"]) == list(range(0, 30, 3))
    assert sorted(rows("view")["n"]) == list(range(1, 30, 3))
    assert sorted(json.loads(d)["n"] for d in rows("_dead_letter")["data"]) == list(range(2, 30, 3))
