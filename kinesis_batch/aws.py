"""The one place boto3 clients are built.

Endpoints, region and credentials come from the standard AWS environment, which boto3 reads
itself: ``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_KINESIS``, ``AWS_ENDPOINT_URL_DYNAMODB``,
``AWS_DEFAULT_REGION``/``AWS_REGION``, ``AWS_ACCESS_KEY_ID``... The Airflow hook passes an
explicit ``boto3.Session`` and endpoint from its connection instead.

S3 is reached by pyarrow and deltalake, not boto3, and neither reads ``AWS_ENDPOINT_URL_S3``:
:func:`s3_settings` resolves endpoint, region and credentials here, the way boto3 would, and
the table sinks pass them on explicitly.

Kinesis clients get no botocore retries: the shard reader and lister count and pace their own
retries (throttling must be visible to them, and botocore's retry would hide it). The control
plane's reads (DescribeStreamSummary, ListShards) go through :func:`retried`: a throttle at the
top of the hour, or a kept-alive connection the endpoint closed as it was reused, is ridden out
instead of failing the run.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserFactory

from kinesis_batch._backoff import UNCOUNTED, Backoff
from kinesis_batch.control.pacing import PACER
from kinesis_batch.control.waiting import Waiting, wait_seconds
from kinesis_batch.errors import (
    AccessDeniedError,
    IllegalArgumentError,
    KinesisBatchError,
    RetryableError,
    ThrottledError,
    error_code,
    from_botocore,
    is_access_denied,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient

_TIMEOUTS: dict[str, Any] = {"connect_timeout": 5, "read_timeout": 30, "tcp_keepalive": True}
KINESIS_CONFIG = Config(retries={"total_max_attempts": 1}, **_TIMEOUTS)
#: The services a run reaches (Glue: an Iceberg table's catalog).
SERVICES = ("kinesis", "dynamodb", "s3", "glue")
DYNAMODB_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 4}, **_TIMEOUTS)


def _epoch_timestamp(value: Any) -> datetime:
    """Parse a timestamp as the Kinesis JSON protocol sends it (epoch seconds, a number).

    botocore's default parser goes through dateutil and a local time zone, which costs more
    than half of its per-record CPU on GetRecords; Kinesis always sends epoch numbers.
    """
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, UTC)
    from botocore.utils import parse_timestamp

    parsed: datetime = parse_timestamp(value)
    return parsed.astimezone(UTC)


def new_session(**settings: Any) -> boto3.Session:
    """A boto3 session on the environment as it is now (``settings`` as ``boto3.Session`` takes
    them: region_name, profile_name, keys...).

    The sessions made here share one loader of botocore's service models, JSON files that never
    change while a process runs: parsing them again is most of what a new client costs (about
    75 of 90 ms of CPU), paid by every run, every Spark task and every UI request otherwise.
    Region, credentials and endpoints are still read afresh by each session and client.
    """
    session = boto3.Session(**settings)
    session._session.register_component("data_loader", _service_models())
    return session


@cache
def _service_models() -> Any:
    """The process's one loader of botocore's service models: a plain session's, which boto3
    set up with its own data path."""
    return boto3.Session()._session.get_component("data_loader")  # boto3's name for its botocore session


def kinesis_client(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> KinesisClient:
    client: KinesisClient = _client(session or new_session(), "kinesis", endpoint_url, KINESIS_CONFIG)
    # A parser factory of this client's own, so the caller's session is left as it was.
    # botocore asks the endpoint's factory for a parser on every response.
    factory = ResponseParserFactory()
    factory.set_parser_defaults(timestamp_parser=_epoch_timestamp)
    client._endpoint._response_parser_factory = factory  # type: ignore[attr-defined]
    return client


def sts_endpoint(region: str | None, endpoint_url: str | None = None) -> str:
    """Where a run assumes its stream's role: ``endpoint_url`` (a connection's), else botocore's
    STS endpoint for ``region`` as the AWS environment resolves it (``AWS_ENDPOINT_URL_STS``,
    ``AWS_ENDPOINT_URL``, the config file, else the region's). A read's tasks are told it in
    their spec, as they are told Kinesis' endpoint: they may run where that environment is not
    (a Spark JVM started before it was set, another host)."""
    return endpoint_url or str(new_session(region_name=region).client("sts").meta.endpoint_url)


def credentials_of(client: Any) -> Any:
    """The credentials a client signs with (botocore keeps them on its signer; None: none found)."""
    return client._request_signer._credentials


def as_role(
    client: KinesisClient, role_arn: str, external_id: str = "", *, sts_endpoint_url: str | None = None
) -> KinesisClient:
    """A Kinesis client like ``client`` (its endpoint and region) that calls with ``role_arn``'s
    credentials (a stream of another account), assumed with ``client``'s own credentials and
    renewed by botocore before they expire, so a read longer than a role session keeps
    reading. Only Kinesis is reached so: the lease and history tables, the outputs and the
    registry stay the consumer's, with its own clients. The role is first assumed on the first
    call (:func:`assume_now` asks at once), at ``sts_endpoint_url`` (default: as the environment
    resolves STS's)."""
    from botocore.credentials import AssumeRoleCredentialFetcher, DeferredRefreshableCredentials

    region = client.meta.region_name
    own = credentials_of(client)  # the caller's: a hook's, a task's
    session = new_session(region_name=region)
    asked: dict[str, Any] = {"RoleSessionName": "kinesis-batch"}
    if external_id:
        asked["ExternalId"] = external_id
    creator = session._session.create_client
    if sts_endpoint_url:
        creator = functools.partial(creator, endpoint_url=sts_endpoint_url)
    fetcher = AssumeRoleCredentialFetcher(
        creator,
        own,
        role_arn,
        extra_args=asked,
        cache={},  # one process's own
    )
    # What botocore's session resolves its credentials to (as its own assume-role provider makes them).
    session._session._credentials = DeferredRefreshableCredentials(  # type: ignore[attr-defined]
        refresh_using=fetcher.fetch_credentials, method="assume-role"
    )
    return kinesis_client(session, endpoint_url=client.meta.endpoint_url)


def assume_now(client: KinesisClient, role_arn: str) -> None:
    """Assume the role of a client :func:`as_role` made, now: a role that cannot be assumed is
    one line (IllegalArgumentError: bad input, exit 2), before the run takes a lease."""
    said_by_botocore = logging.getLogger("botocore.credentials")
    level = said_by_botocore.level
    said_by_botocore.setLevel(logging.ERROR)  # its warning and traceback would repeat the one line said here
    try:
        credentials_of(client).get_frozen_credentials()
    except (ClientError, BotoCoreError) as exc:
        trust = "its trust policy must allow them (and --external-id when it asks one)"
        if is_access_denied(exc):  # IAM does not say which refused: the caller's policy or the role's trust
            denied = from_botocore(exc, operation="AssumeRole", resource=role_arn)
            raise AccessDeniedError(f"{denied}; --role-arn {role_arn}: {trust}") from exc
        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IllegalArgumentError(
            f"--role-arn {role_arn}: cannot be assumed with this account's credentials ({said}); {trust}"
        ) from exc
    finally:
        said_by_botocore.setLevel(level)


def assumed_role(
    client: KinesisClient, role_arn: str, external_id: str = "", *, sts_endpoint_url: str | None = None
) -> KinesisClient:
    """:func:`as_role`'s client, its role assumed now (:func:`assume_now`: a role that cannot be
    assumed is one line, exit 2): what a command that reads one stream's state at once uses."""
    theirs = as_role(client, role_arn, external_id, sts_endpoint_url=sts_endpoint_url)
    assume_now(theirs, role_arn)
    return theirs


def dynamodb_client(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> DynamoDBClient:
    dynamodb: DynamoDBClient = _client(session or new_session(), "dynamodb", endpoint_url, DYNAMODB_CONFIG)
    return dynamodb


def glue_client(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> Any:
    """Glue: the Schema Registry's schema versions (Iceberg's Glue catalog is pyiceberg's own)."""
    return _client(session or new_session(), "glue", endpoint_url, DYNAMODB_CONFIG)


def cloudwatch_client(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> Any:
    """CloudWatch, for ``--metrics cloudwatch`` (its endpoint: ``AWS_ENDPOINT_URL_CLOUDWATCH``)."""
    return _client(session or new_session(), "cloudwatch", endpoint_url, DYNAMODB_CONFIG)


def emr_serverless_client(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> Any:
    """EMR Serverless, for a read step run as a job run (its endpoint: ``AWS_ENDPOINT_URL_EMR_SERVERLESS``)."""
    return _client(session or new_session(), "emr-serverless", endpoint_url, DYNAMODB_CONFIG)


def _client(session: boto3.Session, service: str, endpoint_url: str | None, config: Config) -> Any:
    try:
        return session.client(service, endpoint_url=endpoint_url, config=config)  # type: ignore[call-overload]
    except BotoCoreError as exc:  # no region, a malformed endpoint URL, ...
        raise from_botocore(exc, operation=f"creating the {service} client") from exc


@dataclass(frozen=True)
class S3Settings:
    """Where S3 is and who we are there, resolved once in the driver.

    ``to_json`` leaves the credentials out: Spark tasks take theirs from their own environment
    (an instance profile on EMR, the session's variables locally), never from a task spec.
    """

    endpoint_url: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"endpoint_url": self.endpoint_url, "region": self.region}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> S3Settings:
        return cls(endpoint_url=body.get("endpoint_url"), region=body.get("region"))

    def filesystem(self) -> Any:
        """A pyarrow S3 file system for these settings (paths are ``bucket/key``)."""
        from pyarrow import fs

        options: dict[str, Any] = {"region": self.region or "us-east-1"}
        if self.endpoint_url:
            options["endpoint_override"] = self.endpoint_url
            options["scheme"] = "http" if self.endpoint_url.startswith("http://") else "https"
        if self.access_key and self.secret_key:
            options |= {"access_key": self.access_key, "secret_key": self.secret_key}
            if self.session_token:
                options["session_token"] = self.session_token
        return fs.S3FileSystem(**options)

    def object_store_options(self) -> dict[str, str]:
        """The same settings as deltalake (object_store) spells them."""
        options = {"AWS_REGION": self.region or "us-east-1"}
        if self.endpoint_url:
            options["AWS_ENDPOINT_URL"] = self.endpoint_url
            if self.endpoint_url.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"
        if self.access_key and self.secret_key:
            options |= {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}
            if self.session_token:
                options["AWS_SESSION_TOKEN"] = self.session_token
        return options


def s3_settings(session: boto3.Session | None = None, *, endpoint_url: str | None = None) -> S3Settings:
    """S3 as boto3 would find it: ``endpoint_url``, else ``AWS_ENDPOINT_URL_S3``, else
    ``AWS_ENDPOINT_URL``; the session's region and credentials (environment, profile, role)."""
    session = session or new_session()
    endpoint = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
    try:
        credentials = session.get_credentials()
    except BotoCoreError as exc:
        raise from_botocore(exc, operation="resolving AWS credentials for S3") from exc
    frozen = credentials.get_frozen_credentials() if credentials is not None else None
    return S3Settings(
        endpoint_url=endpoint,
        region=session.region_name,
        access_key=frozen.access_key if frozen else None,
        secret_key=frozen.secret_key if frozen else None,
        session_token=frozen.token if frozen else None,
    )


def aws_env(session: boto3.Session, endpoints: Mapping[str, str | None], region: str | None = None) -> dict[str, str]:
    """A session (and per-service endpoints: ``{"kinesis": url, ...}``) as the standard AWS
    environment, for a process of our own that builds its clients from it (spark-submit)."""
    try:
        credentials = session.get_credentials()
    except BotoCoreError as exc:
        raise from_botocore(exc, operation="resolving AWS credentials for spark-submit") from exc
    env: dict[str, str | None] = {"AWS_DEFAULT_REGION": region or session.region_name}
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        env |= {"AWS_ACCESS_KEY_ID": frozen.access_key, "AWS_SECRET_ACCESS_KEY": frozen.secret_key}
        env["AWS_SESSION_TOKEN"] = frozen.token
    env |= {f"AWS_ENDPOINT_URL_{service.upper()}": url for service, url in endpoints.items()}
    return {name: value for name, value in env.items() if value}


T = TypeVar("T")
#: What a caller makes of an AWS error code it handles itself: the error to raise instead,
#: given the translated one (which keeps AWS's code and message).
Handler = Callable[[KinesisBatchError], BaseException]


def aws_call(operation: str, resource: str, call: Callable[[], T], *, codes: Mapping[str, Handler] = {}) -> T:
    """Run one AWS call: botocore's errors leave as this package's, raised ``from`` the original
    (the boundary for every AWS call but the DynamoDB stores', kinesis_batch.leases.dynamodb).
    ``codes``: the error codes the caller handles, each raised as its handler's error."""
    try:
        return call()
    except ClientError as exc:
        error = from_botocore(exc, operation=operation, resource=resource)
        handler = codes.get(error_code(exc))
        raise (handler(error) if handler else error) from exc
    except BotoCoreError as exc:
        raise from_botocore(exc, operation=operation, resource=resource) from exc


#: The control plane's waits: from 0.2 s doubling to 60 s with full jitter (a failure that is no
#: throttle: to 5 s), as many tries as the call's budget of seconds allows
#: (kinesis_batch.control.waiting: 300 s by default), not a count. AWS counts a limit per second
#: (DescribeStreamSummary: 20 a second per account) and a throttled call counts against it too:
#: N runs retrying at once get through only when their tries come less often than the limit, so
#: the waits must grow to N over the limit seconds (20 runs at 1 a second: tries 20 s apart on
#: average), while one run throttled once retries within 0.2 s.
CONTROL_PLANE_BACKOFF = Backoff(base=0.2, cap=60.0, attempts=UNCOUNTED)


def account_of(client: Any) -> str:
    """Whose limits a client's calls count against: its region and access key (a role of
    another account signs with its own)."""
    return f"{client.meta.region_name}/{getattr(credentials_of(client), 'access_key', '')}"


def retried(
    operation: str,
    resource: str,
    call: Callable[[], T],
    *,
    codes: Mapping[str, Handler] = {},
    backoff: Backoff = CONTROL_PLANE_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
    account: str = "",
) -> T:
    """:func:`aws_call` for a call that reads and may be made again (:func:`retrying`). The
    errors ``codes`` handle are raised at once."""
    return retrying(
        lambda: aws_call(operation, resource, call, codes=codes),
        backoff=backoff,
        sleep=sleep,
        operation=operation,
        account=account,
        resource=resource,
    )


def retrying(
    call: Callable[[], T],
    *,
    backoff: Backoff = CONTROL_PLANE_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
    operation: str = "",
    account: str = "",
    resource: str = "",
) -> T:
    """``call`` (one AWS call, its errors already this package's) tried again with backoff and
    full jitter while it fails retryably (throttled; the endpoint dropped the connection, timed
    out or failed on its side), until ``backoff.attempts`` tries or the call's budget of seconds
    waited (kinesis_batch.control.waiting) is spent, then that error is raised. Any other error
    is raised at once. The first try takes its turn in the process's pace under the account's
    documented limit of ``operation`` (kinesis_batch.control.pacing); a retry waits its backoff,
    which spreads the retries, and every answer or throttle sets the pace. The one retry loop of
    the control plane's calls: many runs started at the top of the hour spread their calls
    instead of failing."""
    waiting = Waiting(operation, backoff, wait_seconds(), resource=resource)
    attempt = 0
    while True:
        attempt += 1
        turn = PACER.turn(operation, account, resource) if attempt == 1 else 0.0  # a retry waits its backoff
        if turn > 0:
            sleep(turn)
        try:
            answer = call()
        except RetryableError as exc:
            PACER.answered(operation, account, resource, throttled=isinstance(exc, ThrottledError))
            if attempt >= backoff.attempts:
                raise
            sleep(waiting.pause(attempt, exc))
            continue
        PACER.answered(operation, account, resource, throttled=False)
        return answer
