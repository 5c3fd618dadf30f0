"""A stream's settings: checked once when made, with one line naming the option; from a mapping
by field name and back to JSON; the options each adapter offers (table of cases: no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch import defaults
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.settings import AIRFLOW, CLI, DAGSTER, NAMES, StreamSettings, as_field_message, offered

GOOD = {"stream": "clicks", "output": "/data/clicks"}
JOB_RUN = {
    "application_id": "00app",
    "execution_role_arn": "arn:aws:iam::123456789012:role/job",
    "environment": "s3://b/env.tar.gz",
}
ARN = "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks"
ROUTED_DMS = {"format": "delta", "output": "/d/{route}", "route_by": "metadata.table-name", "changes": "dms"}


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        ({"stream": "no spaces"}, "--stream: 'no spaces' is not a Kinesis stream name"),
        ({"output": ""}, "--output: an output root is needed"),
        ({"format": "csv"}, "--format"),
        ({"table": "x"}, "--table: 'x' is not a DynamoDB table name"),
        ({"initial_position": "yesterday"}, "yesterday"),
        ({"lease_seconds": 5}, "--lease-seconds: 5 is not in 10..86400"),
        ({"lease_seconds": "60"}, "--lease-seconds: '60' is not a number"),
        ({"read_limits": "fast"}, "fast"),
        ({"shards_per_task": -1}, "--shards-per-task: -1 is not 0 or more"),
        ({"shards_per_task": 1.5}, "--shards-per-task: 1.5 is not a whole number"),
        ({"partition_by": "weekly"}, "'weekly': use day, hour"),
        ({"target_file_mb": 0}, "--target-file-mb: 0 is not in 1..4096"),
        ({"lag_threshold_seconds": 0}, "--lag-threshold-seconds: 0 is not more than 0"),
        ({"dead_letter_threshold": 1.5}, "--dead-letter-threshold: 1.5 is not in 0..1"),
        ({"decode": "json", "dead_letter_output": "/data/clicks"}, "--dead-letter-output must differ from --output"),
        ({"decode": "yaml"}, "yaml"),
        ({"retries": 3}, "retries: not a setting (the settings: "),
        ({"lease_secs": 30}, "lease_secs: not a setting (did you mean lease_seconds?)"),
        # Another account's stream: its ARN, a role of its account.
        ({"stream": "arn:aws:kinesis:eu-west-1:12345:stream/x"}, "is not a Kinesis stream ARN"),
        ({"stream_arn": "arn:aws:kinesis:eu-west-1:123456789012:stream/orders"}, "names another stream than clicks"),
        (
            {"stream": ARN, "stream_arn": "arn:aws:kinesis:eu-west-1:123456789012:stream/other"},
            "--stream-arn arn:aws:kinesis:eu-west-1:123456789012:stream/other differs from --stream",
        ),
        ({"role_arn": "arn:aws:iam::123456789012:user/me"}, "--role-arn: 'arn:aws:iam::123456789012:user/me' is not"),
        ({"external_id": "x"}, "--external-id goes with --role-arn"),
        # Where the read runs: one place, said in a form that works.
        ({"spark_remote": "http://h:15002"}, "--spark-remote: 'http://h:15002' is not a Spark Connect URL"),
        ({"spark_remote": "sc://h:notaport"}, "--spark-remote: 'sc://h:notaport': its port is not a number"),
        ({"spark_remote": "sc://:15002"}, "--spark-remote: 'sc://:15002' names no host"),
        (
            {"spark_master": "spark://h:7077", "emr_serverless": JOB_RUN},
            "--spark-master and emr_serverless both say where the read runs: choose one",
        ),
        # Routing: the template both ways, decoded records, one dead-letter output, the values.
        ({"decode": "json", "route_by": "type"}, "--route-by type: --output must name each table with {route} once"),
        ({"decode": "json", "output": "/data/{route}"}, "holds {route}: say which field names the table (--route-by)"),
        ({"output": "/data/{route}", "route_by": "type"}, "--route-by type reads decoded records: --decode json"),
        ({"decode": "json", "output": "/d/{route}", "route_by": "a..b"}, "--route-by 'a..b': a field or a dotted"),
        ({"decode": "json", "output": "/d/{route}", "route_by": "t", "routes": "a,b/c"}, "--routes: 'b/c' cannot"),
        ({"decode": "json", "routes": "a,b"}, "--routes goes with --route-by"),
        (
            {"decode": "json", "output": "/d/{route}", "route_by": "t", "max_new_tables": -1},
            "--max-new-tables: -1 is not 0 or more",
        ),
        # Metrics: a backend of ours, a level, a Pushgateway exactly for prometheus.
        ({"metrics": "graphite"}, "--metrics 'graphite': choose one of none, cloudwatch, emf, statsd, prometheus"),
        ({"metrics_level": "verbose"}, "--metrics-level 'verbose': choose summary or detailed"),
        ({"metrics": "prometheus"}, "--metrics prometheus needs --pushgateway URL"),
        ({"metrics": "emf", "pushgateway": "http://gw:9091"}, "--pushgateway goes with --metrics prometheus"),
        ({"metrics": "prometheus", "pushgateway": "gw:9091"}, "--pushgateway 'gw:9091': an http:// or https:// URL"),
        # Routed changes: --key ROUTE:COL names a route the run may take, of a routed stream.
        ({"format": "delta", "changes": "dms", "key": "orders:id"}, "--key orders:id names a routed table's key: it"),
        (
            {**ROUTED_DMS, "routes": "orders", "key": "id;refunds:id"},
            "--key refunds:id: route 'refunds' is not one of --routes",
        ),
        ({**ROUTED_DMS, "key": "a/b:id"}, "--key a/b:id: 'a/b' cannot name a table"),
        ({**ROUTED_DMS, "key": ":id"}, "--key ':id': write ROUTE:COL[,COL] (orders:id) or COL[,COL]"),
        ({**ROUTED_DMS, "key": "orders:id;orders:n"}, "--key 'orders:n': orders is given twice"),
        ({**ROUTED_DMS, "key": "orders:id,id"}, "--key id,id names a column twice"),
        (
            {"decode": "json", "output": "/d/{route}", "route_by": "t", "dead_letter_output": "/d/{route}_bad"},
            "--dead-letter-output /d/{route}_bad: one for the whole stream, without {route}",
        ),
    ],
)
def test_a_bad_setting_is_refused_in_one_line_naming_it(changed: dict[str, Any], says: str) -> None:
    with pytest.raises(IllegalArgumentError) as refused:
        StreamSettings.from_mapping(GOOD | changed)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "named",
    [
        pytest.param({"stream": ARN}, id="the stream named by its ARN"),
        pytest.param({"stream": "clicks", "stream_arn": ARN}, id="its name and its ARN"),
        pytest.param({"stream": ARN, "stream_arn": ARN}, id="its ARN twice"),
    ],
)
def test_another_accounts_stream_is_named_by_its_arn_and_keeps_its_name_for_the_rest(named: dict[str, Any]) -> None:
    settings = StreamSettings.from_mapping(GOOD | named | {"role_arn": "arn:aws:iam::123456789012:role/r"})
    assert (settings.stream, settings.stream_arn, settings.stream_id) == ("clicks", ARN, ARN)
    assert settings.lease_table == "kinesis-batch-clicks"  # this account's table, by the stream's name
    assert StreamSettings.from_mapping(settings.to_json()) == settings


def test_unset_settings_take_the_defaults_the_help_names_and_json_goes_round() -> None:
    settings = StreamSettings.from_mapping(GOOD | {"table": None, "lease_seconds": 90})  # a whole number is a number
    assert settings.lease_table == "kinesis-batch-clicks" and settings.lease_seconds == 90.0
    assert (settings.format, settings.target_file_mb) == (defaults.FORMAT, defaults.TARGET_FILE_MB)
    assert StreamSettings.from_mapping(settings.to_json()) == settings
    assert list(settings.to_json()) == list(NAMES)


@pytest.mark.parametrize(
    ("values", "dead_letters"),
    [
        (GOOD, ""),  # raw rows have none
        (GOOD | {"decode": "json"}, "/data/clicks_dead_letter"),
        (GOOD | {"decode": "json", "dead_letter_output": "/data/bad"}, "/data/bad"),
        # Routed: one table beside the routes' tables (no route starts with _).
        (GOOD | {"decode": "json", "output": "/data/app/{route}", "route_by": "type"}, "/data/app/_dead_letter"),
    ],
)
def test_a_decoding_streams_dead_letters_go_beside_its_output_unless_named(
    values: dict[str, str], dead_letters: str
) -> None:
    assert StreamSettings.from_mapping(values).dead_letters_at() == dead_letters


def test_each_adapter_offers_the_options_that_mean_something_to_it() -> None:
    names = {where: {option.name for option in offered(where)} for where in (CLI, AIRFLOW, DAGSTER)}
    assert "spark_master" in names[CLI] & names[AIRFLOW] and "spark_master" not in names[DAGSTER]
    assert "lag_threshold_seconds" in names[AIRFLOW] & names[DAGSTER] and "lag_threshold_seconds" not in names[CLI]
    assert set(NAMES) == names[CLI] | names[AIRFLOW] | names[DAGSTER]


@pytest.mark.parametrize(
    ("message", "as_field"),
    [
        ("--lease-seconds: 5 is not in 10..86400", "lease_seconds: 5 is not in 10..86400"),
        ("--schema-evolution: 'x'", "schema_evolution: 'x'"),  # not --schema's
        ("--shards-per-task: -1 is not 0 or more", "shards_per_task: -1 is not 0 or more"),
        ("something else", "something else"),
        (
            "--spark-remote and emr_serverless both say where the read runs: choose one",
            "spark_remote and emr_serverless both say where the read runs: choose one",
        ),
    ],
)
def test_a_message_names_the_option_as_a_field_for_files_and_params(message: str, as_field: str) -> None:
    assert as_field_message(message) == as_field
