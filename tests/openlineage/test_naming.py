"""The datasets' OpenLineage names: a stream from its ARN, an output from its asset URI (table
of cases); anything else is refused in one line."""

from __future__ import annotations

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.openlineage.naming import output_dataset, stream_dataset


def test_a_stream_is_named_by_region_and_account_then_its_name() -> None:
    arn = "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks"
    assert stream_dataset(arn) == ("kinesis://eu-west-1:123456789012", "clicks")
    with pytest.raises(IllegalArgumentError, match="not a Kinesis stream's ARN"):
        stream_dataset("arn:aws:dynamodb:eu-west-1:123456789012:table/leases")


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("s3://lake/app/clicks", ("s3://lake", "app/clicks")),
        ("s3://lake", ("s3://lake", "")),
        ("file:///data/clicks", ("file", "/data/clicks")),
        ("iceberg://default/analytics.clicks", ("iceberg://default", "analytics.clicks")),
    ],
)
def test_an_output_is_named_as_the_spec_names_its_storage(uri: str, named: tuple[str, str]) -> None:
    assert output_dataset(uri) == named


def test_an_unknown_output_is_refused() -> None:
    with pytest.raises(IllegalArgumentError, match="no OpenLineage name"):
        output_dataset("gs://bucket/x")
