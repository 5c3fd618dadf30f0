"""A stream setting as an option: its flag, its type and bounds checked in one line naming the
flag, a table of settings made into its value, and a setting nobody offers answered with the
likeliest one meant."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import pytest

from kinesis_batch.bounds import POSITIVE, Bound
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.options import AIRFLOW, CLI, bound_of, coerce, flag, kind, not_a_setting, option


@dataclass(frozen=True)
class Knobs:
    lease_seconds: float = option(30.0, "how long", bound=Bound(10, 86_400))
    shards_per_task: int = option(1, "shards", bound=POSITIVE, where=frozenset({CLI, AIRFLOW}))
    worker_name: str = option("", "who")
    limits: Any = option(None, "a table of its own", parse=lambda value: dict(value or {}))  # noqa: RUF009

    def __post_init__(self) -> None:
        for each in fields(self):
            coerce(self, each)


def test_each_option_has_its_flag_kind_bounds_and_places() -> None:
    lease, shards, name, limits = fields(Knobs)
    assert [flag(f) for f in (lease, shards, name)] == ["--lease-seconds", "--shards-per-task", "--worker-name"]
    assert [kind(f) for f in (lease, shards, name, limits)] == [float, int, str, dict]
    assert bound_of(lease) == Bound(10, 86_400) and bound_of(name).said == ""
    assert shards.metadata["where"] == {CLI, AIRFLOW} and lease.metadata["help"] == "how long"


def test_a_whole_number_is_a_fine_float_and_a_table_is_made_into_its_value() -> None:
    knobs = Knobs(lease_seconds=60, limits={"calls": 5})  # type: ignore[arg-type]
    assert knobs.lease_seconds == 60.0 and isinstance(knobs.lease_seconds, float)
    assert knobs.limits == {"calls": 5}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"lease_seconds": 5}, "--lease-seconds"),
        ({"lease_seconds": "60"}, "--lease-seconds: '60' is not a number"),
        ({"shards_per_task": 0}, "--shards-per-task"),
        ({"shards_per_task": 1.5}, "--shards-per-task: 1.5 is not a whole number"),
        ({"shards_per_task": True}, "--shards-per-task: True is not a whole number"),
        ({"worker_name": 7}, "--worker-name: 7 is not a string"),
    ],
)
def test_a_value_of_another_type_or_out_of_bounds_is_one_line_naming_the_flag(given: dict[str, Any], said: str) -> None:
    with pytest.raises(IllegalArgumentError) as caught:
        Knobs(**given)
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)


def test_a_setting_nobody_offers_names_the_likeliest_one_meant() -> None:
    names = ["lease_seconds", "shards_per_task", "worker_name"]
    assert str(not_a_setting("lease_second", names)) == "lease_second: not a setting (did you mean lease_seconds?)"
    assert str(not_a_setting("colour", names)) == (
        "colour: not a setting (the settings: lease_seconds, shards_per_task, worker_name)"
    )
    assert str(not_a_setting("timeout", ["timeout_minutes"], within="emr_serverless.")).startswith(
        "emr_serverless.timeout: not a setting"
    )
