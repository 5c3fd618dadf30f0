"""A setting as an Airflow form field (a Param with JSON Schema), drawn from its option
(kinesis_batch.options): its type, choices, bounds and help. Every DAG's form uses it."""

from __future__ import annotations

from dataclasses import MISSING, Field
from typing import Any

from airflow.sdk import Param

from kinesis_batch.options import bound_of, kind


def setting_param(option: Field[Any], value: Any) -> Param:
    """One stream setting as a form field: its type, choices and bounds, its help."""
    rules: dict[str, Any] = {"type": _JSON_TYPES[kind(option)], "description": option.metadata["help"]}
    if kind(option) is dict:  # a table of settings: not set (null) by default
        value = value.to_json() if hasattr(value, "to_json") else value
        return Param(value, **{**rules, "type": ["null", "object"]})
    if option.metadata["choices"]:
        rules["enum"] = list(option.metadata["choices"])
    rules.update(bound_of(option).schema())
    if option.default is MISSING:
        rules.update(minLength=1, maxLength=128 if option.name == "stream" else 2048)
        if not value or value is MISSING:
            return Param(**{**rules, "description": f"no {option.name} is configured: name one"})
    return Param(value, **rules)


_JSON_TYPES = {str: "string", int: "integer", float: "number", dict: "object"}


__all__ = ["setting_param"]
