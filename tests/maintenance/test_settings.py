"""What a maintenance run is asked to do: the defaults, each value checked when made in one line
naming its flag, and the values the maintenance uses derived from them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kinesis_batch import defaults
from kinesis_batch.changes.settings import TOMBSTONE_HOURS
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.maintenance.settings import MAINTAIN_OPTIONS, MaintainSettings, maintain_option


def test_the_defaults_are_the_runs_own() -> None:
    settings = MaintainSettings()
    assert settings.target_file_mb == defaults.TARGET_FILE_MB and settings.retain_hours == defaults.RETAIN_HOURS
    assert settings.tombstone_hours == TOMBSTONE_HOURS
    assert settings.target_bytes == defaults.TARGET_FILE_MB * 1024 * 1024
    assert settings.retain == timedelta(hours=defaults.RETAIN_HOURS)


@pytest.mark.parametrize(
    ("given", "flag"),
    [
        ({"target_file_mb": 0}, "--target-file-mb"),
        ({"target_file_mb": 4097}, "--target-file-mb"),
        ({"target_file_mb": "128"}, "--target-file-mb"),
        ({"target_file_mb": True}, "--target-file-mb"),
        ({"retain_hours": -1}, "--retain-hours"),
        ({"tombstone_hours": 0}, "--tombstone-hours"),
    ],
)
def test_a_value_out_of_its_bounds_or_type_is_one_line_naming_its_flag(given: dict[str, Any], flag: str) -> None:
    with pytest.raises(IllegalArgumentError, match=flag) as caught:
        MaintainSettings(**given)
    assert "\n" not in str(caught.value)


def test_a_whole_number_is_a_fine_number_of_hours() -> None:
    settings = MaintainSettings(tombstone_hours=12)  # type: ignore[arg-type]
    assert settings.tombstone_hours == 12.0 and isinstance(settings.tombstone_hours, float)


def test_every_option_is_offered_by_name() -> None:
    assert [option.name for option in MAINTAIN_OPTIONS] == ["target_file_mb", "retain_hours", "tombstone_hours"]
    assert maintain_option("retain_hours").default == defaults.RETAIN_HOURS
