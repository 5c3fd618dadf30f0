"""The engine's job forms: on a classic session an RDD job runs one task per item and gives back
every row, a task's error fails the job, and the warm-up counts the session's task slots (the
Spark Connect form runs in tests/scenarios/test_spark_connect.py, on a real Connect server)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from kinesis_batch.spark.engine import classic

pytestmark = pytest.mark.contract("spark", why="the read step's job forms on this PySpark's session")


def _twice(item: str) -> Iterator[tuple[str, str]]:
    yield item, str(os.getpid())
    yield item.upper(), ""


def _fails(item: str) -> Iterator[tuple[str, str]]:
    raise RuntimeError(f"no {item}")
    yield item, item  # a generator, as the read's tasks are


def _nothing() -> None:
    pass


def test_each_runs_one_task_per_item_and_gives_back_every_row(spark: Any) -> None:
    rows = spark.jobs.each(["a", "b", "c"], _twice)
    assert [key for key, _ in rows] == ["a", "A", "b", "B", "c", "C"]
    assert all(value.isdigit() for key, value in rows if key.islower()), "each row came from a Python worker"


def test_a_task_that_raises_fails_the_job_with_its_message(spark: Any) -> None:
    with pytest.raises(Exception, match="no b"):
        spark.jobs.each(["b"], _fails)


def test_slots_are_the_sessions_default_parallelism(spark: Any) -> None:
    engine = classic(spark.session)
    assert engine.jobs.slots(_nothing) == spark.session.sparkContext.defaultParallelism == 2
