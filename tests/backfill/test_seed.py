"""A backfill seeded at its start checkpoints, then run: each lease table's ownership is checked
once (the main table's, whose history the start may read, and the backfill's own, which the
seed marks and the run's start then takes as checked), and every record lands once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from kinesis_batch.backfill.plan import plan_backfill
from kinesis_batch.backfill.seed import seed_backfill
from kinesis_batch.config import RunConfig
from kinesis_batch.ownership import MARK_KEY
from kinesis_batch.run import CatchUpRun
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put


def test_a_backfill_checks_each_tables_owner_once_and_reads_every_record_once(
    kinesis: Any, dynamodb: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=2)
    sent = put(kinesis, name, 30)
    main = RunConfig.of(stream=name, output=str(tmp_path / "main"), worker_id="main-worker")
    CatchUpRun(main, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark).run()
    config, plan = plan_backfill(main, "b1", output=str(tmp_path / "backfill"))
    marks_read: Counter[str] = Counter()

    def count_mark_reads(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key") == MARK_KEY:
            marks_read.update([params["TableName"]])

    dynamodb.meta.events.register("before-parameter-build.dynamodb.GetItem", count_mark_reads)
    run = CatchUpRun(config, kinesis=kinesis, dynamodb=dynamodb, spark=lambda: spark, run_id="b1")
    starts = seed_backfill(run, plan, start="trim_horizon")
    report = run.run()

    assert set(starts.values()) == {"TRIM_HORIZON"} and report.records == len(sent)
    assert marks_read == {f"{plan.main_table}-history": 1, f"{plan.table}-history": 1}
    assert_exactly_once(read_output(tmp_path / "backfill"), sent)
