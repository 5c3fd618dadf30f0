"""botocore errors are translated at the boundary into one typed tree."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoRegionError

from kinesis_batch import errors


def client_error(code: str, status: int = 400) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": f"{code} happened"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "AnyOperation",
    )


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (client_error("ProvisionedThroughputExceededException"), errors.ThrottledError),
        (client_error("LimitExceededException"), errors.ThrottledError),
        (client_error("ThrottlingException"), errors.ThrottledError),
        (client_error("ResourceNotFoundException"), errors.InvalidStateError),
        (client_error("InvalidArgumentException"), errors.IllegalArgumentError),
        (client_error("ValidationException"), errors.IllegalArgumentError),
        (client_error("InternalFailure", 500), errors.DependencyError),
        (client_error("SomethingNew", 503), errors.DependencyError),
        (client_error("UnrecognizedClientException"), errors.InvalidStateError),
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), errors.DependencyError),
        (NoRegionError(), errors.IllegalArgumentError),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, type) else getattr(v, "operation_name", type(v).__name__),
)
def test_botocore_errors_map_to_what_the_caller_should_do(exc: Exception, expected: type[Exception]) -> None:
    translated = errors.from_botocore(exc, operation="GetRecords", resource="stream/shard")
    assert type(translated) is expected
    assert "GetRecords stream/shard" in str(translated)


def test_retryable_errors_share_a_base_and_arguments_are_value_errors() -> None:
    assert issubclass(errors.ThrottledError, errors.RetryableError)
    assert issubclass(errors.DependencyError, errors.RetryableError)
    assert issubclass(errors.LeaseLostError, errors.LeaseError)
    assert issubclass(errors.CheckpointOrderError, errors.IllegalArgumentError)
    assert issubclass(errors.IllegalArgumentError, ValueError)
    for name in ("StreamNotFoundError", "LeaseTableNotFoundError", "MalformedLeaseError", "TrimmedDataError"):
        assert issubclass(getattr(errors, name), errors.InvalidStateError)


def test_unreachable_endpoint_message_says_so() -> None:
    translated = errors.from_botocore(EndpointConnectionError(endpoint_url="http://127.0.0.1:9"), operation="Scan")
    assert "cannot reach the endpoint" in str(translated)
