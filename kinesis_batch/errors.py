"""The one error tree of kinesis-batch, grouped by what the caller should do.

::

    KinesisBatchError
    ├── RetryableError                 try the same thing again later
    │   ├── ThrottledError             a service limit said "slow down" (after our own backoff)
    │   └── DependencyError            endpoint unreachable, timed out, or failed on its side
    ├── LeaseError                     stop working on the shard: it is not ours any more
    │   ├── LeaseLostError             another worker took it, or it expired under us
    │   └── ShutdownError              asked to stop (SIGINT, SIGTERM, an orchestrator's kill): stopped cleanly
    ├── InvalidStateError              the world is not as the operation needs it; a person must look
    │   ├── StreamNotFoundError
    │   ├── LeaseTableNotFoundError
    │   ├── MalformedLeaseError        a lease item that does not parse
    │   ├── LineageError               a shard listing that is not a DAG
    │   ├── TrimmedDataError           a checkpoint points at data retention already removed
    │   ├── ForeignTableError          a lease table that is not this consumer's
    │   ├── StreamRecreatedError       the stream was created again after its lease table was made
    │   ├── ForeignOutputError         an output that is not this consumer's: another format's table,
    │   │                              somebody else's files, or not the output its lease table names
    │   └── BadRecordError             a record that does not decode, with --on-bad-record fail
    └── IllegalArgumentError           the caller asked for something impossible; retrying cannot help
        └── CheckpointOrderError       a checkpoint that would move backwards or beyond what was read

A lost conditional write is not an error but a return value: a fenced write returns the lease
as stored afterwards, or ``None`` when the fence did not hold (the lease was lost); a create
returns ``False`` when the item existed already. Exceptions of the libraries below
never leave the package: :func:`from_botocore` (boto3) and :func:`from_storage` (pyarrow's file
systems, deltalake, pyiceberg and its catalogs) translate them at the boundary, and the caller
raises the result ``from`` the original.

What a caller does with an error is :func:`classify`'s answer, the same for every adapter: the
command line's exit code, the HTTP status of the Airflow page's JSON, and whether an
orchestrator retries the task (Airflow) or step (Dagster) or fails it for good.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ReadTimeoutError,
)


class KinesisBatchError(Exception):
    """Root of every error this package raises on purpose."""


class RetryableError(KinesisBatchError):
    """The operation may succeed if tried again later."""


class ThrottledError(RetryableError):
    """A service limit was exceeded, and our own bounded backoff did not get through."""


class DependencyError(RetryableError):
    """An endpoint could not be reached or failed on its side (5xx, timeout, connection)."""


class LeaseError(KinesisBatchError):
    """The caller does not (or no longer) hold the lease it acted under."""


class LeaseLostError(LeaseError):
    """Another worker took the lease, or it expired: fenced writes will not go through."""


class ShutdownError(LeaseError):
    """The work was asked to stop and stopped at a safe point, doing nothing more. A run stopped
    by a signal (kinesis_batch.stopping) carries its ``signal_number``: what was published stays,
    what was not was discarded, the leases were let go, and the exit code is 128 + the number, as
    a shell reports a process a signal ended. Without one: a task's reader stopped because
    another shard of its task failed."""

    def __init__(self, message: str, *, signal_number: int | None = None) -> None:
        super().__init__(message)
        self.signal_number = signal_number


class InvalidStateError(KinesisBatchError):
    """Something outside the caller's arguments is not as the operation requires."""


class AccessDeniedError(InvalidStateError):
    """A principal lacks a permission the call needs: one line naming the action, the resource
    and the principal, and where the policies it needs are printed (``kinesis-batch iam-policy``)."""


class KeyUnusableError(AccessDeniedError):
    """The stream's records are encrypted with a KMS key its reader cannot use: denied it,
    disabled, pending deletion, gone, or not opted in (Kinesis's KMS errors of GetRecords).
    ``said``: AWS's code and words."""

    def __init__(self, message: str, said: str = "") -> None:
        super().__init__(message)
        self.said = said


class StreamNotFoundError(InvalidStateError):
    """The Kinesis stream does not exist (or is not visible with these credentials)."""


class LeaseTableNotFoundError(InvalidStateError):
    """The DynamoDB lease table does not exist."""


class MalformedLeaseError(InvalidStateError):
    """A lease item in the table lacks required attributes or holds values of the wrong type."""


class LineageError(InvalidStateError):
    """The shard listing does not form a parent/child DAG (e.g. a cycle)."""


class TrimmedDataError(InvalidStateError):
    """A checkpoint points at records the stream's retention has already removed."""


class ForeignTableError(InvalidStateError):
    """The lease table is not this consumer's: another application's (a KCL one), another
    stream's, or of a newer kinesis-batch. Nothing of it is touched."""


class StreamRecreatedError(InvalidStateError):
    """The stream was deleted and created again after its lease table was made: the
    checkpoints are the old stream's (``kinesis-batch reset`` starts over)."""


class ForeignOutputError(InvalidStateError):
    """The output is not this consumer's to write: it holds another format's table or files that
    are none of kinesis-batch's, or the lease table publishes to another output (``--move-output``
    moves it). Nothing was written."""


class BadRecordError(InvalidStateError):
    """A record that cannot be decoded, with ``--on-bad-record fail``: the run stops, publishing
    nothing and moving no checkpoint."""


class IllegalArgumentError(KinesisBatchError, ValueError):
    """An argument can never be valid: a malformed sequence number, position or setting."""


class CheckpointOrderError(IllegalArgumentError):
    """A checkpoint would move backwards, or past the last record that was read."""


_THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "LimitExceededException",
        "ThrottlingException",
        "Throttling",
        "RequestLimitExceeded",
        "KMSThrottlingException",
    }
)
_NOT_FOUND_CODES = frozenset({"ResourceNotFoundException"})
_ARGUMENT_CODES = frozenset({"InvalidArgumentException", "ValidationException", "ExpiredNextTokenException"})


_ACCESS_DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied"})
_KEY_UNUSABLE_CODES = frozenset(
    {
        "KMSAccessDeniedException",
        "KMSDisabledException",
        "KMSInvalidStateException",
        "KMSNotFoundException",
        "KMSOptInRequired",
    }
)
#: How AWS says which principal may not do what (IAM's message, in every service that says it).
_NOT_AUTHORIZED = re.compile(
    r'User: (?P<who>\S+) is not authorized to perform: (?P<action>\S+) on resource: "?(?P<resource>[^\s"]+)'
)
#: What every access denied line ends with: where the missing permission is found.
POLICIES = "kinesis-batch iam-policy prints the policies each principal needs"


def access_denied(message: str, where: str) -> AccessDeniedError:
    """One line of a denied call: ``access denied: ACTION on RESOURCE for PRINCIPAL (...)`` when
    AWS's message names them, else the call and AWS's own words."""
    said = _NOT_AUTHORIZED.search(message)
    if said is None:
        return AccessDeniedError(f"access denied: {where}: {message} ({POLICIES})")
    return AccessDeniedError(f"access denied: {said['action']} on {said['resource']} for {said['who']} ({POLICIES})")


def key_unusable(key: str, stream: str, said: str) -> KeyUnusableError:
    """The line of a stream whose KMS ``key`` (DescribeStreamSummary's ``KeyId``) the reader
    cannot use, as found before anything is read; ``said``: AWS's code and words."""
    return KeyUnusableError(
        f"access denied: kms:Decrypt on {key}, the KMS key stream {stream} is encrypted with, for its reader "
        f"({said}) (kinesis-batch iam-policy --kms-key {key} prints the policies each principal needs)",
        said,
    )


def error_code(exc: BaseException) -> str:
    """The AWS error code of a ClientError ('' for anything else)."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def is_throttling(exc: BaseException) -> bool:
    return error_code(exc) in _THROTTLING_CODES


def is_access_denied(exc: BaseException) -> bool:
    """Whether AWS refused the call to its principal (IAM: its policies, or a resource's)."""
    return error_code(exc) in _ACCESS_DENIED_CODES


def from_botocore(exc: Exception, *, operation: str, resource: str = "") -> KinesisBatchError:
    """Translate a botocore/boto3 exception into this package's tree.

    The caller raises the result ``from exc`` so the cause stays attached::

        except (ClientError, BotoCoreError) as exc:
            raise from_botocore(exc, operation="ListShards", resource=stream) from exc

    ``resource`` names what was being acted on (a stream, a table) for the message.
    ResourceNotFound becomes :class:`InvalidStateError`; callers that know which resource it
    was (a stream, a table) raise the specific subclass themselves.
    """
    where = f"{operation} {resource}".strip()
    if isinstance(exc, ClientError):
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "") or str(exc)
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        text = f"{where}: {code}: {message}"
        if code in _THROTTLING_CODES:
            return ThrottledError(text)
        if code in _NOT_FOUND_CODES:
            return InvalidStateError(text)
        if code in _ARGUMENT_CODES:
            return IllegalArgumentError(text)
        if status >= 500 or code in {"InternalFailure", "ServiceUnavailable", "InternalServerError"}:
            return DependencyError(text)
        if code in _ACCESS_DENIED_CODES:
            return access_denied(message, where)
        if code in _KEY_UNUSABLE_CODES:
            said = f"{code}: {message}"
            return KeyUnusableError(f"access denied: kms:Decrypt of the records of {where} ({said}) ({POLICIES})", said)
        if code in {"UnrecognizedClientException", "InvalidSignatureException"}:
            return InvalidStateError(f"{text} (check the AWS credentials and region)")
        return InvalidStateError(text)
    if isinstance(exc, (NoRegionError, NoCredentialsError)):
        return IllegalArgumentError(f"{where}: {exc} (set AWS_DEFAULT_REGION and credentials)")
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)):
        return DependencyError(f"{where}: cannot reach the endpoint: {exc}")
    if isinstance(exc, BotoCoreError):
        return DependencyError(f"{where}: {exc}")
    return KinesisBatchError(f"{where}: {exc}")


# Words in a storage library's message that no retry can fix: a missing bucket, denied access
# (pyarrow says ACCESS_DENIED, delta-rs "lacked the necessary privileges" or AccessDenied,
# pyiceberg AccessDenied or 403 Forbidden).
_STORAGE_DENIED_WORDS = (
    "AccessDenied",
    "Access Denied",
    "ACCESS_DENIED",
    "Forbidden",
    "lacked the necessary privileges",
)
#: How delta-rs says an error's causes, a line each led by a (coloured) arrow: IAM's words come
#: split at each ": ", which this joins again.
_CAUSE = re.compile(r"\s*\n\s*(?:\x1b\[[0-9;]*m)?↳(?:\x1b\[[0-9;]*m)?\s*")
_STORAGE_PERMANENT_WORDS = ("NoSuchBucket", "403", *_STORAGE_DENIED_WORDS)


def first_line(exc: BaseException) -> str:
    """An error's first line, or its kind's name when it says nothing."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def from_storage(exc: BaseException, doing: str, *, remote: bool) -> KinesisBatchError:
    """Translate an error of a storage library into this package's tree, as ``doing: <the
    library's first line>``. pyarrow, deltalake and pyiceberg raise OSError, ValueError or
    their own kinds, with the service's answer only in the text.

    Permanent (InvalidStateError): a missing bucket, denied access, a value the library
    refused, and every error of a local file system (``remote=False``). Anything else of a
    remote store or catalog (S3, Glue, a REST catalog) is DependencyError: it may pass."""
    if isinstance(exc, KinesisBatchError):
        return exc
    text = first_line(exc)
    if remote and any(word in text for word in _STORAGE_DENIED_WORDS):
        said = _NOT_AUTHORIZED.search(_CAUSE.sub(": ", str(exc)))  # the service's answer, among the causes
        return access_denied(said.group(0) if said else text, doing)
    permanent = (
        not remote
        or isinstance(exc, (PermissionError, ValueError))
        or any(word in text for word in _STORAGE_PERMANENT_WORDS)
    )
    return (InvalidStateError if permanent else DependencyError)(f"{doing}: {text}")


@contextmanager
def storage_errors(doing: str, *, remote: bool, passing: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """A storage library's errors raised in the block, as :func:`from_storage` says them, raised
    ``from`` the original; this tree's own errors and ``passing`` pass through (the caller decides
    on them: a commit conflict, a missing table)."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, (KinesisBatchError, *passing)):
            raise
        raise from_storage(exc, doing, remote=remote) from exc


#: How a line says that the step which failed left the output as it was.
NOTHING_PUBLISHED = "nothing was published"


@contextmanager
def before_publishing() -> Iterator[None]:
    """A step that runs before its batch is published (the read): an error of this tree raised in
    the block says so at the end of its line, once (``...; nothing was published``), so whoever
    reads it knows the output is as it was and the next run reads those records again. Same class
    and fields, raised ``from`` the original. Lease errors pass as they are: their lines say what
    became of the batch themselves (a lost lease, a stop's teardown)."""
    try:
        yield
    except LeaseError:
        raise
    except KinesisBatchError as exc:
        if NOTHING_PUBLISHED in str(exc):
            raise
        said = copy.copy(exc)  # keeps the class and its fields; only the line grows
        said.args = (f"{exc}; {NOTHING_PUBLISHED}",)
        raise said from exc


@dataclass(frozen=True)
class Classification:
    """What a caller does with an error: the command line's exit code, the HTTP status of the
    Airflow page's JSON, and whether retrying the same thing can help (``permanent``: no)."""

    name: str
    exit_code: int
    http_status: int
    permanent: bool


BAD_INPUT = Classification("bad input", exit_code=2, http_status=400, permanent=True)
NOT_FOUND = Classification("not found", exit_code=2, http_status=404, permanent=True)
BAD_STATE = Classification("bad state", exit_code=2, http_status=409, permanent=True)
LEASE_LOST = Classification("lease lost", exit_code=3, http_status=409, permanent=True)
RETRYABLE = Classification("retryable", exit_code=4, http_status=503, permanent=False)
FAILED = Classification("failed", exit_code=1, http_status=500, permanent=False)


def interrupted(signal_number: int) -> Classification:
    """A run stopped by a signal: exit 128 + its number (130 SIGINT, 143 SIGTERM), as shells say
    it. Permanent for the orchestrators: the stop discarded the batch and released the leases, so
    a retry of the same task cannot go on; the next scheduled run does, from the checkpoints."""
    return Classification("interrupted", exit_code=128 + signal_number, http_status=503, permanent=True)


def classify(exc: BaseException) -> Classification:
    """The one answer to "what now?" for an error, most specific class first. Anything that is
    not ours (a bug, Spark's own failure) is FAILED: exit 1, and orchestrators may retry it."""
    if isinstance(exc, ShutdownError) and exc.signal_number is not None:
        return interrupted(exc.signal_number)
    if isinstance(exc, (StreamNotFoundError, LeaseTableNotFoundError)):
        return NOT_FOUND
    if isinstance(exc, IllegalArgumentError):
        return BAD_INPUT
    if isinstance(exc, InvalidStateError):
        return BAD_STATE
    if isinstance(exc, LeaseError):
        return LEASE_LOST
    if isinstance(exc, RetryableError):
        return RETRYABLE
    return FAILED


def kind_of(exc: BaseException) -> str:
    """The name an error of this package crosses a process boundary by (a Spark task's failure, a
    job run's result), for :func:`kind_named` to make it again there; "" for any other error."""
    return type(exc).__name__ if isinstance(exc, KinesisBatchError) else ""


def kind_named(name: str) -> type[KinesisBatchError] | None:
    """The error class of this package :func:`kind_of` named ``name``; None for any other name.
    Each takes its one line."""
    found: list[type[KinesisBatchError]] = [KinesisBatchError]
    for kind in found:  # grows as it is walked: every subclass, wherever it is defined
        if kind.__name__ == name:
            return kind
        found += kind.__subclasses__()
    return None


def from_exit_code(code: int, line: str, kind: str = "") -> KinesisBatchError:
    """A read step's exit code, from a process run elsewhere (spark-submit, an EMR Serverless job
    run), back as the error it means (``classify``'s way back), saying ``line``: the error
    :func:`kind_of` named ``kind`` when it said one that exits with ``code``, else 2 bad input or
    state and 3 a lost lease, which no retry can help; anything else retryable. Not for 0."""
    assert code != 0, "exit 0 is no error"
    named = kind_named(kind) if kind else None
    if named is not None and classify(made := named(line)).exit_code == code:
        return made
    if code == LEASE_LOST.exit_code:
        return LeaseLostError(line)
    if code == BAD_STATE.exit_code:
        return InvalidStateError(line)
    return DependencyError(line)
