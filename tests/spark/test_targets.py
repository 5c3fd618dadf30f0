"""Where a task's rows go, by route (kinesis_batch.spark.targets): a known route's table, a new
route's folder in the batch's staging, or, for a run that makes no table, nowhere but its one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinesis_batch.errors import InvalidStateError
from kinesis_batch.routing.routes import SINGLE
from kinesis_batch.spark.targets import RouteTargets, Target
from kinesis_batch.storage.layout import FileLayout, PartitionBy
from kinesis_batch.storage.place import Place


def test_a_known_route_goes_to_its_table_and_a_new_one_to_its_folder_in_the_staging(tmp_path: Path) -> None:
    new_layout = FileLayout(PartitionBy.parse("day(arrival_time)"))
    staging = Place(str(tmp_path / "routes"))
    targets = RouteTargets({"click": Target(Place(str(tmp_path / "click")), FileLayout())}, Target(staging, new_layout))
    assert targets.target("click") == Target(Place(str(tmp_path / "click")), FileLayout())
    assert targets.target("refund") == Target(staging.child("refund"), new_layout)
    assert targets.is_known("click") and not targets.is_known("refund")
    assert RouteTargets.from_json(targets.to_json()) == targets


def test_a_run_without_routes_has_one_target_and_no_other_route_has_one(tmp_path: Path) -> None:
    single = RouteTargets.single(Place(str(tmp_path)), FileLayout())
    assert single.target(SINGLE).data == Place(str(tmp_path)) and single.to_json()["new"] is None
    with pytest.raises(InvalidStateError, match="route 'click' has no table and this run makes none"):
        single.target("click")
