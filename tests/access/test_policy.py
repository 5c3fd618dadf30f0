"""Policy documents from needs: one statement per purpose, merged; the worker that reads in its
own process holds the executors' statements without saying twice what it already holds; a
trust policy names no resource."""

from __future__ import annotations

from devkit.iam_policy import Request, allowed
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.access.arns import Where
from kinesis_batch.access.needs import EXECUTORS, TRUST, WORKER, Condition, Need, needs
from kinesis_batch.access.policy import VERSION, document, documents
from kinesis_batch.settings import StreamSettings
from tests.access.test_needs import deployments

HERE = Where("111122223333", "eu-west-1")


def test_needs_of_one_purpose_are_one_statement_and_other_conditions_stay_apart() -> None:
    held = (Condition("StringEquals", "cloudwatch:namespace", ("A",)),)
    made = document(
        [
            Need(WORKER, "Files", ("s3:PutObject",), ("arn:aws:s3:::a/x/*",)),
            Need(WORKER, "Files", ("s3:GetObject", "s3:PutObject"), ("arn:aws:s3:::b/y/*",)),
            Need(WORKER, "Metrics", ("cloudwatch:PutMetricData",), ("*",), held),
        ]
    )
    assert made == {
        "Version": VERSION,
        "Statement": [
            {"Sid": "Files", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
             "Resource": ["arn:aws:s3:::a/x/*", "arn:aws:s3:::b/y/*"]},
            {"Sid": "Metrics", "Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*",
             "Condition": {"StringEquals": {"cloudwatch:namespace": "A"}}},
        ],
    }  # fmt: skip


def test_a_worker_that_reads_itself_holds_the_executors_statements_once() -> None:
    found = needs(StreamSettings(stream="clicks", output="s3://lake/c", format="delta"), HERE)
    alone = documents(found, reads_here=False)[WORKER]["Statement"]
    reading = documents(found, reads_here=True)[WORKER]["Statement"]
    assert [s["Sid"] for s in reading] == [s["Sid"] for s in alone]  # the executors' are all held already
    assert documents(found, reads_here=True)[EXECUTORS] == documents(found, reads_here=False)[EXECUTORS]


def test_a_trust_policy_names_its_principal_and_no_resource() -> None:
    settings = StreamSettings(
        stream="o", stream_arn="arn:aws:kinesis:us-east-1:444455556666:stream/o",
        role_arn="arn:aws:iam::444455556666:role/r", external_id="x1", output="/o",
    )  # fmt: skip
    (trust,) = documents(needs(settings, HERE), reads_here=True)[TRUST]["Statement"]
    assert trust == {
        "Sid": "TrustTheConsumersAccount", "Effect": "Allow", "Action": "sts:AssumeRole",
        "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
        "Condition": {"StringEquals": {"sts:ExternalId": "x1"}},
    }  # fmt: skip


def test_one_purposes_prefixes_of_one_bucket_are_one_statement_and_of_two_buckets_two_numbered() -> None:
    def listed(bucket: str, prefix: str) -> Need:
        held = (Condition("StringLike", "s3:prefix", (prefix, f"{prefix}/*")),)
        return Need(WORKER, "ListOutputFiles", ("s3:ListBucket",), (f"arn:aws:s3:::{bucket}",), held)

    made = document([listed("lake", "a"), listed("lake", "b"), listed("other", "c")])["Statement"]
    assert [(s["Sid"], s["Resource"], s["Condition"]["StringLike"]["s3:prefix"]) for s in made] == [
        ("ListOutputFiles", "arn:aws:s3:::lake", ["a", "a/*", "b", "b/*"]),
        ("ListOutputFiles2", "arn:aws:s3:::other", ["c", "c/*"]),
    ]


@given(st.lists(deployments(), min_size=1, max_size=4), st.booleans(), st.booleans())
def test_every_need_of_any_deployment_is_allowed_by_its_principals_document_and_sids_are_unique(
    drawn: list[tuple[StreamSettings, str]], backfills: bool, reads_here: bool
) -> None:
    found = [need for settings, kms in drawn for need in needs(settings, HERE, kms_key=kms, backfills=backfills)]
    docs = documents(found, reads_here=reads_here)
    for doc in docs.values():
        sids = [statement["Sid"] for statement in doc["Statement"]]
        assert len(sids) == len(set(sids)), sids
    for need in found:
        if not need.resources:  # a trust policy: checked by its own test
            continue
        context = tuple((condition.key, condition.values[0]) for condition in need.conditions)
        caller = session_of(need.principals[0]) if need.principals else ""  # a resource policy's
        for action in need.actions:
            for resource in need.resources:
                request = Request(action, resource, context)
                assert allowed(docs[need.principal], request, caller), (need.sid, request)


def session_of(named: str) -> str:
    """A principal a resource policy's Principal names: a session of its role, or of its account's."""
    if ":role/" in named:
        return named.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/") + "/s"
    return f"arn:aws:sts::{named.split(':')[4]}:assumed-role/any/s"
