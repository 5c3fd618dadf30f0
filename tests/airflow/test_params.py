"""A setting as an Airflow form field: its JSON Schema is drawn from its option (type, choices,
bounds, help), a table of settings is an object that may be null, and a setting with no
default asks for a value. Airflow is imported after ``airflow_home`` set it up."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.maintenance.settings import maintain_option
from kinesis_batch.settings import OPTIONS

pytestmark = [
    pytest.mark.usefixtures("airflow_home"),
    pytest.mark.contract("airflow", why="the DAGs' forms as this Airflow validates them"),
]


def option(name: str) -> Any:
    return next(each for each in OPTIONS if each.name == name)


@pytest.mark.parametrize(
    ("name", "value", "rules"),
    [
        ("lease_seconds", 60.0, {"type": "number", "minimum": 10, "maximum": 86_400}),
        ("tombstone_hours", 168.0, {"type": "number", "exclusiveMinimum": 0}),
        ("max_new_tables", 20, {"type": "integer", "minimum": 0}),
        ("decode", "raw", {"type": "string", "enum": ["raw", "json", "avro", "protobuf"]}),
        ("emr_serverless", None, {"type": ["null", "object"]}),
    ],
)
def test_a_settings_field_carries_its_options_type_choices_and_bounds(
    name: str, value: Any, rules: dict[str, Any]
) -> None:
    from kinesis_batch.airflow.params import setting_param

    param = setting_param(option(name), value)
    assert param.value == value
    for rule, said in rules.items():
        assert param.schema[rule] == said, rule
    assert param.description == option(name).metadata["help"]


def test_a_setting_with_no_default_asks_for_one_and_refuses_empty() -> None:
    from airflow.sdk.exceptions import ParamValidationError

    from kinesis_batch.airflow.params import setting_param

    param = setting_param(option("stream"), "")
    assert param.schema["minLength"] == 1 and param.schema["maxLength"] == 128
    assert "no stream is configured" in str(param.description)
    with pytest.raises(ParamValidationError):
        param.resolve("")
    assert param.resolve("clicks") == "clicks"


def test_a_maintenance_setting_is_a_field_the_same_way() -> None:
    from airflow.sdk.exceptions import ParamValidationError

    from kinesis_batch.airflow.params import setting_param

    param = setting_param(maintain_option("retain_hours"), 168)
    assert (param.schema["type"], param.schema["minimum"], param.schema["maximum"]) == ("integer", 0, 87_600)
    with pytest.raises(ParamValidationError):
        param.resolve(-1)
