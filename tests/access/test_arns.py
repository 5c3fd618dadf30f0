"""The ARNs of what a deployment touches: a table of cases, each written out by hand."""

from __future__ import annotations

import pytest

from kinesis_batch.access import arns
from kinesis_batch.access.arns import Where

HERE = Where("111122223333", "eu-west-1")


@pytest.mark.parametrize(
    ("made", "arn"),
    [
        (arns.stream("clicks", HERE), "arn:aws:kinesis:eu-west-1:111122223333:stream/clicks"),
        (
            arns.stream("arn:aws:kinesis:us-east-1:444455556666:stream/orders", HERE),
            "arn:aws:kinesis:us-east-1:444455556666:stream/orders",
        ),
        (
            arns.dynamodb_table("kinesis-batch-clicks", HERE),
            "arn:aws:dynamodb:eu-west-1:111122223333:table/kinesis-batch-clicks",
        ),
        (arns.s3_objects("s3://lake/apps/clicks/"), "arn:aws:s3:::lake/apps/clicks/*"),
        (arns.s3_objects("s3://lake"), "arn:aws:s3:::lake/*"),
        (arns.s3_objects("s3://lake/apps/{route}"), "arn:aws:s3:::lake/apps/*/*"),
        (arns.s3_object("s3://art/env.tar.gz", "aws-cn"), "arn:aws-cn:s3:::art/env.tar.gz"),
        (arns.s3_bucket("s3://lake/apps/clicks"), "arn:aws:s3:::lake"),
        (arns.glue_table("analytics", "{route}", HERE), "arn:aws:glue:eu-west-1:111122223333:table/analytics/*"),
        (
            arns.emr_job_runs("00abc", HERE),
            "arn:aws:emr-serverless:eu-west-1:111122223333:/applications/00abc/jobruns/*",
        ),
        (HERE.root, "arn:aws:iam::111122223333:root"),
    ],
)
def test_each_arn_is_the_one_iam_matches(made: str, arn: str) -> None:
    assert made == arn


def test_a_stream_named_by_arn_lives_in_its_own_account_and_region() -> None:
    arn = "arn:aws-us-gov:kinesis:us-gov-west-1:444455556666:stream/orders"
    assert arns.stream_where(arn, HERE) == Where("444455556666", "us-gov-west-1", "aws-us-gov")
    assert arns.stream_where("", HERE) == HERE
