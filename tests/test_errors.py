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


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (errors.InvalidStateError("a task failed"), "a task failed; nothing was published"),
        (errors.DependencyError("cannot reach S3"), "cannot reach S3; nothing was published"),
        (errors.BadRecordError("shard s, bad record"), "shard s, bad record; nothing was published"),
        (errors.DependencyError("job run ended FAILED; nothing was published (logs)"), None),
        (errors.LeaseLostError("lost the leases of s to w2"), None),
        (errors.ShutdownError("stopped while reading", signal_number=15), None),
    ],
)
def test_an_error_before_publishing_says_once_that_nothing_was_published(
    raised: errors.KinesisBatchError, said: str | None
) -> None:
    with pytest.raises(errors.KinesisBatchError) as caught, errors.before_publishing():
        raise raised
    if said is None:  # its line says what became of the batch itself
        assert caught.value is raised
        return
    assert type(caught.value) is type(raised) and str(caught.value) == said
    assert caught.value.__cause__ is raised
    assert errors.classify(caught.value) == errors.classify(raised)


def test_before_publishing_keeps_an_errors_fields_and_lets_other_errors_pass() -> None:
    class Marked(errors.InvalidStateError):
        def __init__(self, message: str, *, shard: str = "") -> None:
            super().__init__(message)
            self.shard = shard

    with pytest.raises(Marked) as caught, errors.before_publishing():
        raise Marked("gap", shard="shardId-1")
    assert (str(caught.value), caught.value.shard) == ("gap; nothing was published", "shardId-1")
    with pytest.raises(KeyError), errors.before_publishing():
        raise KeyError("not ours: a bug is reported as it is")


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (2, errors.InvalidStateError),
        (3, errors.LeaseLostError),
        (1, errors.DependencyError),
        (137, errors.DependencyError),
    ],
)
def test_an_exit_code_from_elsewhere_is_the_error_it_means_and_classifies_back_to_it(code: int, error: type) -> None:
    made = errors.from_exit_code(code, "the read step said so")
    assert type(made) is error and str(made) == "the read step said so"
    assert errors.classify(made).exit_code == (code if code in (2, 3) else 4), (
        "2 and 3 travel back unchanged; others retry"
    )


@pytest.mark.parametrize(
    ("code", "message", "line"),
    [
        (
            "AccessDeniedException",
            "User: arn:aws:sts::111122223333:assumed-role/airflow/i-1 is not authorized to perform: "
            "dynamodb:UpdateItem on resource: arn:aws:dynamodb:us-east-1:111122223333:table/kinesis-batch-clicks "
            "because no identity-based policy allows the dynamodb:UpdateItem action",
            "access denied: dynamodb:UpdateItem on arn:aws:dynamodb:us-east-1:111122223333:table/kinesis-batch-clicks "
            "for arn:aws:sts::111122223333:assumed-role/airflow/i-1 (kinesis-batch iam-policy prints the policies "
            "each principal needs)",
        ),
        (
            "AccessDenied",
            "Access Denied",
            "access denied: GetRecords stream/shard: Access Denied (kinesis-batch iam-policy prints the policies "
            "each principal needs)",
        ),
    ],
)
def test_a_denied_call_is_one_line_naming_what_was_denied_to_whom(code: str, message: str, line: str) -> None:
    denied = ClientError({"Error": {"Code": code, "Message": message}}, "AnyOperation")
    translated = errors.from_botocore(denied, operation="GetRecords", resource="stream/shard")
    assert isinstance(translated, errors.AccessDeniedError) and str(translated) == line
    assert errors.classify(translated).exit_code == 2


def test_an_error_carried_from_elsewhere_by_its_kind_is_raised_again_as_that_kind() -> None:
    denied = errors.access_denied("Access Denied", "GetRecords stream/shard")
    assert errors.kind_of(denied) == "AccessDeniedError" and errors.kind_of(KeyError("k")) == ""
    again = errors.from_exit_code(2, str(denied), errors.kind_of(denied))
    assert type(again) is errors.AccessDeniedError and str(again) == str(denied)
    assert type(errors.from_exit_code(2, "x", "NoSuchKind")) is errors.InvalidStateError
    # A kind its exit code does not say (a read stopped by a signal) is the exit code's error.
    assert type(errors.from_exit_code(143, "stopped", "ShutdownError")) is errors.DependencyError


@pytest.mark.parametrize(
    ("message", "denied"),
    [
        ("Generic S3 error: AccessDenied: Access Denied", True),
        ("When reading information for key 'o' in bucket 'b': AWS Error ACCESS_DENIED ... 403", True),
        ("Generic S3 error: NoSuchBucket", False),
        ("Object at location tables/t403/x.parquet not found", False),  # a 403 in a name is no denial
        ("connection reset by peer", False),
    ],
)
def test_a_storage_librarys_denied_call_is_the_access_denied_line(message: str, denied: bool) -> None:
    translated = errors.from_storage(OSError(message), "writing s3://lake/c", remote=True)
    assert isinstance(translated, errors.AccessDeniedError) is denied
    if denied:
        assert str(translated) == f"access denied: writing s3://lake/c: {message} ({errors.POLICIES})"


def test_delta_rs_denial_names_the_call_iams_words_in_its_chain_of_causes_say() -> None:
    # delta-rs's text as it says an S3 refusal: its causes a line each, IAM's words split at ": ".
    arrow = "\n          \x1b[31m\u21b3\x1b[0m "
    said = (
        "Kernel error -> The operation lacked the necessary privileges to complete for path t/_delta_log/x"
        f"{arrow}403 Forbidden{arrow}<Error><Code>AccessDenied</Code><Message>User"
        f"{arrow}arn:aws:sts::1:assumed-role/w/i is not authorized to perform{arrow}s3:GetObject on resource"
        f'{arrow}"arn:aws:s3:::lake/t/_delta_log/x" because no identity-based policy allows the s3:GetObject action'
        "</Message></Error>"
    )
    translated = errors.from_storage(OSError(said), "cannot open the Delta table at s3://lake/t", remote=True)
    assert str(translated) == (
        f"access denied: s3:GetObject on arn:aws:s3:::lake/t/_delta_log/x for arn:aws:sts::1:assumed-role/w/i "
        f"({errors.POLICIES})"
    )
    assert errors.classify(translated).exit_code == 2


@pytest.mark.parametrize(
    "code",
    ["KMSAccessDeniedException", "KMSDisabledException", "KMSInvalidStateException", "KMSNotFoundException",
     "KMSOptInRequired"],
)  # fmt: skip
def test_a_kms_key_the_reader_cannot_use_is_access_denied_and_no_retry(code: str) -> None:
    refused = ClientError({"Error": {"Code": code, "Message": "the key says no"}}, "GetRecords")
    translated = errors.from_botocore(refused, operation="GetRecords", resource="s/shardId-0")
    assert isinstance(translated, errors.KeyUnusableError) and translated.said == f"{code}: the key says no"
    assert str(translated).startswith("access denied: kms:Decrypt of the records of GetRecords s/shardId-0 (")
    assert errors.classify(translated).exit_code == 2
    named = errors.key_unusable("arn:aws:kms:eu-west-1:1:key/k", "s", translated.said)
    assert str(named) == (
        f"access denied: kms:Decrypt on arn:aws:kms:eu-west-1:1:key/k, the KMS key stream s is encrypted with, for "
        f"its reader ({code}: the key says no) (kinesis-batch iam-policy --kms-key arn:aws:kms:eu-west-1:1:key/k "
        "prints the policies each principal needs)"
    )
    throttled = ClientError({"Error": {"Code": "KMSThrottlingException", "Message": "slow"}}, "GetRecords")
    assert isinstance(errors.from_botocore(throttled, operation="GetRecords"), errors.ThrottledError)
