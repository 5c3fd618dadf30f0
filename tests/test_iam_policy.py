"""The tests' IAM evaluator (devkit.iam_policy) against cases written out by hand: it allows only what a
statement's action, resource and conditions all match, as IAM does."""

from __future__ import annotations

import pytest
from devkit.iam_policy import Request, allowed

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "Files", "Effect": "Allow", "Action": ["s3:GetObject", "s3:Put*"], "Resource": "arn:aws:s3:::lake/c/*"},
        {"Sid": "List", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::lake",
         "Condition": {"StringLike": {"s3:prefix": ["c", "c/*"]}}},
        {"Sid": "Metrics", "Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*",
         "Condition": {"StringEquals": {"cloudwatch:namespace": "KinesisBatch"}}},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("request_", "allows"),
    [
        (Request("s3:GetObject", "arn:aws:s3:::lake/c/_delta_log/0.json"), True),
        (Request("S3:PutObject", "arn:aws:s3:::lake/c/x"), True),  # actions match whatever their case
        (Request("s3:DeleteObject", "arn:aws:s3:::lake/c/x"), False),
        (Request("s3:GetObject", "arn:aws:s3:::lake/other/x"), False),
        (Request("s3:ListBucket", "arn:aws:s3:::lake", (("s3:prefix", "c/_delta_log/"),)), True),
        (Request("s3:ListBucket", "arn:aws:s3:::lake", (("s3:prefix", "d/"),)), False),
        (Request("s3:ListBucket", "arn:aws:s3:::lake"), False),  # a condition's key absent: no match
        (Request("cloudwatch:PutMetricData", "*", (("cloudwatch:namespace", "KinesisBatch"),)), True),
        (Request("cloudwatch:PutMetricData", "*", (("cloudwatch:namespace", "Other"),)), False),
    ],
)
def test_a_request_is_allowed_only_when_a_statement_matches_it_whole(request_: Request, allows: bool) -> None:
    assert allowed(POLICY, request_) is allows


#: A resource's policy: a KMS key's, naming an account's root and another account's role.
KEY_POLICY = {
    "Statement": [
        {"Effect": "Allow", "Action": "kms:Decrypt", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}},
        {"Effect": "Allow", "Action": "kms:Decrypt", "Principal": {"AWS": ["arn:aws:iam::444455556666:role/reader"]}},
    ]
}


@pytest.mark.parametrize(
    ("principal", "by_root", "allows"),
    [
        ("arn:aws:sts::111122223333:assumed-role/airflow/i-1", True, True),  # the root names its account's
        ("arn:aws:sts::111122223333:assumed-role/airflow/i-1", False, False),  # but not itself
        ("arn:aws:sts::444455556666:assumed-role/reader/kinesis-batch", False, True),  # a role names its sessions
        ("arn:aws:iam::444455556666:role/reader", False, True),
        ("arn:aws:sts::444455556666:assumed-role/writer/kinesis-batch", True, False),
        ("arn:aws:iam::777788889999:user/consumer", True, False),
        ("", True, False),
    ],
)
def test_a_resource_policy_allows_only_the_principals_it_names(principal: str, by_root: bool, allows: bool) -> None:
    request = Request("kms:Decrypt", "arn:aws:kms:us-east-1:111122223333:key/k")
    assert allowed(KEY_POLICY, request, principal, by_root=by_root) is allows
