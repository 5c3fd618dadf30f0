"""What a stream's runs touch, per principal: every setting is accounted for, a table of
deployments gives the statements each principal holds, and drawn deployments never hold a
statement on a resource wider than the settings name."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.access.arns import Where
from kinesis_batch.access.needs import (
    EXECUTORS,
    FIELDS,
    KMS,
    NO_RESOURCE_TYPE,
    READER,
    STREAM_POLICY,
    TRUST,
    WORKER,
    Catalog,
    Need,
    needs,
)
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.settings import StreamSettings

HERE = Where("111122223333", "eu-west-1")
THEIRS = "arn:aws:kinesis:us-east-1:444455556666:stream/orders"
JOB = ServerlessSettings.of(
    {
        "application_id": "00abc",
        "execution_role_arn": "arn:aws:iam::111122223333:role/job",
        "environment": "s3://art/e.tar.gz",
    }
)


def sids(found: list[Need]) -> dict[str, list[str]]:
    by: dict[str, list[str]] = {}
    for need in found:
        by.setdefault(need.principal, []).append(need.sid)
    return by


def test_every_setting_says_what_it_reaches_so_a_new_one_cannot_be_forgotten() -> None:
    assert set(FIELDS) == {field.name for field in dataclasses.fields(StreamSettings)}


@pytest.mark.parametrize(
    ("settings", "kms", "expected"),
    [
        (
            {"stream": "clicks", "output": "/data/clicks"},
            "",
            {WORKER: ["ReadTheStream", "LeasesCheckpointsAndHistory"], EXECUTORS: ["ReadTheRecords", "ReadTheLeases"]},
        ),
        (
            {"stream": "clicks", "output": "s3://lake/clicks", "format": "delta", "metrics": "cloudwatch"},
            "",
            {WORKER: ["ReadTheStream", "LeasesCheckpointsAndHistory", "OutputFiles", "ListOutputFiles",
                      "PutTheRunsMetrics"],
             EXECUTORS: ["ReadTheRecords", "ReadTheLeases", "OutputFiles", "ListOutputFiles"]},
        ),
        (
            {"stream": "orders", "stream_arn": THEIRS, "output": "/data/o"},
            "",
            {WORKER: ["ReadTheStream", "LeasesCheckpointsAndHistory"], EXECUTORS: ["ReadTheRecords", "ReadTheLeases"],
             STREAM_POLICY: ["ShareTheStream"]},
        ),
        (
            {"stream": "orders", "stream_arn": THEIRS, "role_arn": "arn:aws:iam::444455556666:role/r", "output": "/o"},
            "arn:aws:kms:us-east-1:444455556666:key/k",  # the key policy names the role: it decides alone
            {WORKER: ["AssumeTheStreamsRole", "LeasesCheckpointsAndHistory"],
             EXECUTORS: ["AssumeTheStreamsRole", "ReadTheLeases"], READER: ["ReadTheStream"],
             TRUST: ["TrustTheConsumersAccount"], KMS: ["LetTheConsumerDecrypt"]},
        ),
        (
            {"stream": "orders", "stream_arn": THEIRS, "role_arn": "arn:aws:iam::777788889999:role/r", "output": "/o"},
            "arn:aws:kms:us-east-1:444455556666:key/k",  # a role of a third account: its own policy too
            {WORKER: ["AssumeTheStreamsRole", "LeasesCheckpointsAndHistory"],
             EXECUTORS: ["AssumeTheStreamsRole", "ReadTheLeases"], READER: ["ReadTheStream", "DecryptTheStream"],
             TRUST: ["TrustTheConsumersAccount"], KMS: ["LetTheConsumerDecrypt"]},
        ),
        (
            {"stream": "clicks", "output": "/data/c", "decode": "avro", "schema": "glue://reg/clicks"},
            "",
            {WORKER: ["ReadTheStream", "LeasesCheckpointsAndHistory", "DecodeWithTheRegistry"],
             EXECUTORS: ["ReadTheRecords", "ReadTheLeases", "DecodeWithTheRegistry"]},
        ),
        (
            {"stream": "clicks", "output": "s3://lake/c", "format": "delta", "emr_serverless": JOB},
            "",
            {WORKER: ["ReadTheStream", "LeasesCheckpointsAndHistory", "OutputFiles", "ListOutputFiles", "StartJobRuns",
                      "WatchAndCancelJobRuns", "PassTheJobRole", "TheEnvironmentArchive"],
             EXECUTORS: ["ReadTheRecords", "ReadTheLeases", "OutputFiles", "ListOutputFiles", "TheEnvironmentArchive"]},
        ),
    ],
)  # fmt: skip
def test_each_deployment_gives_each_principal_its_statements(
    settings: dict[str, Any], kms: str, expected: dict[str, list[str]]
) -> None:
    assert sids(needs(StreamSettings(**settings), HERE, kms_key=kms)) == expected


def test_an_iceberg_table_on_glue_is_its_catalogs_table_and_its_warehouses_files() -> None:
    settings = StreamSettings(stream="clicks", output="analytics.clicks", format="iceberg", catalog="glue")
    found = needs(settings, HERE, catalog=Catalog("glue", "s3://wh/"))
    (table,) = [n for n in found if n.sid == "OutputTable"]
    assert table.resources[-1] == "arn:aws:glue:eu-west-1:111122223333:table/analytics/clicks"
    (files,) = [n for n in found if n.sid == "OutputFiles" and n.principal == WORKER]
    assert files.resources == ("arn:aws:s3:::wh/analytics.db/clicks/*",)
    assert [n.actions for n in found if n.sid == "FindOutputTable"] == [("glue:GetTable",)]
    on_sql = needs(settings, HERE, catalog=Catalog("sql", "s3://wh/"))  # pyiceberg's own convention
    assert {n.resources for n in on_sql if n.sid == "OutputFiles"} == {("arn:aws:s3:::wh/analytics/clicks/*",)}


@st.composite
def deployments(draw: st.DrawFn) -> tuple[StreamSettings, str]:
    theirs = draw(st.booleans())
    settings: dict[str, Any] = {"stream": draw(st.sampled_from(["clicks", "orders-2", "a.b_c"]))}
    if theirs:
        settings["stream_arn"] = f"arn:aws:kinesis:us-east-1:444455556666:stream/{settings['stream']}"
        if draw(st.booleans()):
            settings["role_arn"] = "arn:aws:iam::444455556666:role/reader"
    fmt = draw(st.sampled_from(["parquet", "delta"]))
    routed = draw(st.booleans())
    settings["format"] = fmt
    settings["output"] = ("s3://lake/apps/" if fmt == "delta" else "/data/") + ("{route}" if routed else "t")
    if routed:
        settings |= {"decode": "json", "route_by": "kind"}
    elif draw(st.booleans()):
        settings |= {"decode": "avro", "schema": "glue://reg/s"}
    settings["metrics"] = draw(st.sampled_from(["none", "cloudwatch", "emf"]))
    if fmt == "delta" and draw(st.booleans()):
        settings["emr_serverless"] = JOB
    kms = draw(st.sampled_from(["", "arn:aws:kms:us-east-1:444455556666:key/k"]))
    return StreamSettings(**settings), kms


@given(deployments(), st.booleans())
def test_no_drawn_deployment_holds_a_resource_wider_than_its_settings_name(
    deployment: tuple[StreamSettings, str], backfills: bool
) -> None:
    settings, kms = deployment
    for need in needs(settings, HERE, kms_key=kms, backfills=backfills):
        for resource in need.resources:
            if resource == "*":  # only an action of no resource type, or a key policy (its key)
                assert set(need.actions) <= NO_RESOURCE_TYPE or need.principal == KMS, need
                assert need.conditions, f"{need.sid}: '*' held to a condition"
                continue
            assert resource.startswith("arn:aws:") and "**" not in resource, need
            account = resource.split(":")[4]
            assert account in ("", "111122223333", "444455556666"), need
            # A wildcard only for what the settings leave open: the objects under a named
            # folder, a route's name, the job runs of an application, a registry's schemas.
            head, _, _ = resource.partition("*")
            assert len(head.rstrip("/")) > len("arn:aws:s3:::"), need
        if need.principal in (READER, STREAM_POLICY):
            assert all(action.startswith(("kinesis:", "kms:")) for action in need.actions), need
