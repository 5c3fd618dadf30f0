"""The decoding settings, checked when made: each mistake is one line naming the setting."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.errors import IllegalArgumentError


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"decode": "xml"}, "--decode 'xml': choose one of raw, json, avro, protobuf"),
        ({"decode": "raw", "schema": "s.json"}, "--schema need(s) --decode json, avro or protobuf"),
        ({"decode": "raw", "decompress": "gzip"}, "--decompress applies to decoded records"),
        ({"decode": "avro"}, "--decode avro needs --schema"),
        ({"decode": "protobuf", "schema": "set.desc"}, "needs --message"),
        ({"decode": "json", "message": "M"}, "--message goes with --decode protobuf only"),
        ({"decode": "json", "schema": "glue://registry"}, "glue://REGISTRY/SCHEMA"),
        ({"decode": "json", "on_bad_record": "skip"}, "--on-bad-record 'skip'"),
        ({"decode": "json", "schema_evolution": "all"}, "--schema-evolution 'all'"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_in_one_line(settings: dict[str, Any], says: str) -> None:
    with pytest.raises(IllegalArgumentError, match=says.replace("(", r"\(").replace(")", r"\)")):
        DecodeSettings(**settings)


def test_settings_travel_as_json_and_unknown_ones_are_named() -> None:
    settings = DecodeSettings(decode="protobuf", schema="glue://reg/orders", transform="m:f")
    assert DecodeSettings.from_json(settings.to_json()) == settings
    assert settings.registry_schema() == ("reg", "orders") and settings.from_registry
    with pytest.raises(IllegalArgumentError, match=r"unknown decode setting.s. colour"):
        DecodeSettings.from_json({"decode": "json", "colour": "red"})
