"""Bad input for --changes: one line naming the option, before anything runs."""

from __future__ import annotations

import pytest

from kinesis_batch.changes.settings import ChangeSettings, parse_delete_when
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.settings import StreamSettings


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"changes": "upsert", "format": "delta", "decode": "json"}, "--changes upsert needs --key"),
        ({"changes": "dms", "format": "delta"}, "--changes dms needs --key"),
        ({"changes": "debezium", "format": "iceberg"}, "--changes debezium needs --key"),
        ({"changes": "dynamodb", "format": "parquet"}, "needs --format delta or iceberg"),
        ({"changes": "upsert", "key": "id", "format": "delta"}, "--changes upsert needs decoded records"),
        (
            {"changes": "upsert", "key": "id", "format": "delta", "decode": "json", "delete_when": "deleted"},
            "--delete-when",
        ),
        ({"changes": "dynamodb", "format": "delta", "sequence_by": "ts"}, "--sequence-by go(es) with --changes upsert"),
        ({"changes": "dynamodb", "format": "delta", "decode": "avro", "schema": "x.avsc"}, "reads JSON records"),
        ({"changes": "merge", "format": "delta"}, "--changes 'merge': choose one of"),
        ({"key": "id", "format": "delta"}, "--key need(s) --changes"),
        ({"changes": "upsert", "key": "id,id", "format": "delta", "decode": "json"}, "names a column twice"),
        ({"changes": "upsert", "key": "id,", "format": "delta", "decode": "json"}, "--key 'id,'"),
    ],
)
def test_bad_change_options_are_one_line_naming_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        StreamSettings(stream="s", output="out", **options)  # type: ignore[arg-type]
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_source_envelope_decodes_json_by_itself_and_round_trips() -> None:
    settings = StreamSettings(stream="s", output="out", format="delta", changes="upsert", key="a,b", decode="json",
                              sequence_by="ts", delete_when="op=d")  # fmt: skip
    changes = settings.change_settings
    assert changes == ChangeSettings("upsert", ("a", "b"), "ts", ("op", "d"))
    assert ChangeSettings.from_json(changes.to_json()) == changes
    assert StreamSettings(stream="s", output="out", format="delta", changes="dynamodb").decoding.decode == "json"
    assert StreamSettings(stream="s", output="out").change_settings is None


@pytest.mark.parametrize(
    ("key", "route", "serves"),
    [
        ("orders:order_id;customers:region,id", "customers", ("region", "id")),
        ("orders:order_id;customers:region,id", "refunds", None),  # dms needs a key: its records are dead letters
        ("orders:order_id ; id", "refunds", ("id",)),  # the bare key serves every other table
        ("id", "orders", ("id",)),
    ],
)
def test_each_routed_table_takes_its_own_key_or_the_bare_one(
    key: str, route: str, serves: tuple[str, ...] | None
) -> None:
    settings = ChangeSettings.parse("dms", key)
    assert settings is not None and ChangeSettings.from_json(settings.to_json()) == settings
    keyed = settings.for_route(route)
    assert (keyed.key if keyed else None) == serves
    assert keyed is None or keyed.route_keys == {}
    learned = ChangeSettings.parse("dynamodb", "orders:order_id")
    assert learned is not None and (found := learned.for_route("refunds")) is not None and found.key == ()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("deleted==true", "one '=' only"),
        ("deleted!=false", "one '=' only"),
        ("deleted=true,op=d", "',' '='"),
        ("op=d,r", "','"),
        ("op = d", None),  # spaces around the '=' are the user's layout: taken
        ("is deleted=true", "' '"),
        ("op=", "write FIELD=VALUE"),
        ("deleted", "write FIELD=VALUE"),
    ],
)
def test_delete_when_is_one_field_equal_to_one_value_and_refuses_what_it_would_not_mean(
    text: str, said: str | None
) -> None:
    if said is None:
        assert parse_delete_when(text) == ("op", "d")
        return
    with pytest.raises(IllegalArgumentError) as raised:
        parse_delete_when(text)
    assert said in str(raised.value) and "FIELD=VALUE" in str(raised.value) and "\n" not in str(raised.value)
