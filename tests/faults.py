"""Fault injection around a REAL Kinesis client (test helper, not product code).

:class:`FaultyKinesis` delegates every call to the real client it wraps, and on the calls a
test configures it instead raises the error AWS would send, or alters the real response to
mimic an AWS behaviour the emulators lack (pages without NextShardIterator, empty pages in the
middle of a shard, paginated ListShards...).

The errors are built the way botocore builds them from the wire: an AWS JSON-protocol error body
(``{"__type": code, "message": ...}``) with its HTTP status goes through botocore's own response
parser and becomes the client's modeled exception class (a ``ClientError`` subclass such as
``ProvisionedThroughputExceededException``), just as if the service had answered.

:class:`FakeClock` is a clock/sleep pair for the reader's ``clock=``/``sleep=`` hooks: sleeping
advances the clock without waiting, and every sleep is recorded.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from botocore.parsers import create_parser

ACCOUNT = "123456789012"

#: What AWS says with each error code (the text is only for humans; code and status matter).
MESSAGES = {
    "ProvisionedThroughputExceededException": "Rate exceeded for shard {shard} in stream {stream} under account "
    + ACCOUNT
    + ".",
    "LimitExceededException": "Rate exceeded for stream {stream} under account " + ACCOUNT + ".",
    "ExpiredIteratorException": (
        "Iterator expired. The iterator was created at time Sun Nov 22 03:39:29 UTC 2026 while right now it is "
        "Sun Nov 22 03:44:30 UTC 2026 which is further in the future than the tolerated delay of 300000 milliseconds."
    ),
    "ExpiredNextTokenException": (
        "The timestamp of the last ListShard call with this NextToken was Sun Nov 22 03:39:29 UTC 2026, which is "
        "further in the past than the tolerated delay of 300000 milliseconds."
    ),
    "ResourceNotFoundException": "Stream {stream} under account " + ACCOUNT + " not found.",
    "InternalFailure": "Internal service failure.",
}


class RunawayCallsError(AssertionError):
    """A wrapped client was called more often than the test allowed: the caller is looping."""


def client_error(client: Any, operation: str, code: str, message: str = "", status: int = 400) -> ClientError:
    """The exception botocore raises when AWS answers ``operation`` (snake_case) with ``code``."""
    api_name = client.meta.method_to_api_mapping[operation]
    operation_model = client.meta.service_model.operation_model(api_name)
    body = json.dumps({"__type": code, "message": message}).encode()
    request_id = str(uuid.uuid4())
    http_response = {
        "status_code": status,
        "headers": {
            "x-amzn-RequestId": request_id,
            "Content-Type": "application/x-amz-json-1.1",
            "Content-Length": str(len(body)),
        },
        "body": body,
    }
    parsed = create_parser(client.meta.service_model.protocol).parse(http_response, operation_model.output_shape)
    parsed.setdefault("ResponseMetadata", {}).update({"RequestId": request_id, "RetryAttempts": 0})
    error: ClientError = client.exceptions.from_code(code)(parsed, api_name)
    return error


@dataclass
class Call:
    """One call the wrapper saw: which, its number among calls of that operation (from 1),
    its arguments, the clock reading when it was made, and what came back."""

    operation: str
    number: int
    params: dict[str, Any]
    at: float
    error: str | None = None
    response: dict[str, Any] | None = None


Selector = Callable[[int, dict[str, Any]], bool]
Alteration = Callable[[int, dict[str, Any], dict[str, Any]], dict[str, Any]]


@dataclass
class _Fault:
    operation: str
    code: str
    message: str
    status: int
    when: Selector


def _selector(calls: Iterable[int] | None, first: int | None, always: bool, when: Selector | None) -> Selector:
    chosen = [calls is not None, first is not None, always, when is not None]
    if sum(chosen) != 1:
        raise ValueError("say exactly one of calls=, first=, always=, when=")
    if calls is not None:
        numbers = frozenset(calls)
        return lambda n, _params: n in numbers
    if first is not None:
        limit = first
        return lambda n, _params: n <= limit
    if when is not None:
        return when
    return lambda _n, _params: True


@dataclass
class FaultyKinesis:
    """A real Kinesis client with injected faults; use it wherever the client goes.

    ``budget`` bounds the calls of any one operation, so a caller that loops fails fast with
    :class:`RunawayCallsError` instead of hanging the test run.
    """

    real: Any
    clock: Callable[[], float] = time.monotonic
    budget: int = 500
    calls: list[Call] = field(default_factory=list)
    _faults: list[_Fault] = field(default_factory=list)
    _alterations: dict[str, list[Alteration]] = field(default_factory=dict)
    _before: dict[str, list[Callable[[int, dict[str, Any]], None]]] = field(default_factory=dict)

    # -- configuring ------------------------------------------------------------------------

    def fail(
        self,
        operation: str,
        code: str,
        *,
        calls: Iterable[int] | None = None,
        first: int | None = None,
        always: bool = False,
        when: Selector | None = None,
        message: str | None = None,
        status: int = 400,
    ) -> FaultyKinesis:
        """Answer the chosen calls of ``operation`` with AWS error ``code`` (the real client is not called)."""
        if operation not in self.real.meta.method_to_api_mapping:
            raise ValueError(f"not a Kinesis operation: {operation}")
        text = message if message is not None else MESSAGES.get(code, code)
        self._faults.append(_Fault(operation, code, text, status, _selector(calls, first, always, when)))
        return self

    def alter(self, operation: str, alteration: Alteration) -> FaultyKinesis:
        """Pass every real response of ``operation`` through ``alteration(number, params, response)``."""
        self._alterations.setdefault(operation, []).append(alteration)
        return self

    def before(self, operation: str, hook: Callable[[int, dict[str, Any]], None]) -> FaultyKinesis:
        """Run ``hook(number, params)`` before each call of ``operation`` reaches the service."""
        self._before.setdefault(operation, []).append(hook)
        return self

    # -- inspecting -------------------------------------------------------------------------

    def of(self, operation: str) -> list[Call]:
        return [c for c in self.calls if c.operation == operation]

    def count(self, operation: str) -> int:
        return len(self.of(operation))

    # -- delegating -------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.real, name)
        if name in self.real.meta.method_to_api_mapping:
            return lambda **params: self._call(name, params)
        return attribute

    def _call(self, operation: str, params: dict[str, Any]) -> Any:
        number = self.count(operation) + 1
        if number > self.budget:
            raise RunawayCallsError(f"{operation} called more than {self.budget} times")
        call = Call(operation, number, copy.copy(params), self.clock())
        self.calls.append(call)
        for fault in self._faults:
            if fault.operation == operation and fault.when(number, params):
                call.error = fault.code
                text = fault.message.format(
                    stream=params.get("StreamName", "stream"), shard=params.get("ShardId", "shardId-000000000000")
                )
                raise client_error(self.real, operation, fault.code, text, fault.status)
        for hook in self._before.get(operation, []):
            hook(number, params)
        try:
            response = dict(getattr(self.real, operation)(**params))
        except ClientError as exc:
            call.error = str(exc.response.get("Error", {}).get("Code"))
            raise
        for alteration in self._alterations.get(operation, []):
            response = alteration(number, params, dict(response))
        call.response = response
        return response


class FakeClock:
    """``clock`` and ``sleep`` for code that paces itself: sleeping only moves the clock."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0, f"asked to sleep {seconds} s"
        self.sleeps.append(seconds)
        self.now += seconds


def response_bytes(response: dict[str, Any]) -> int:
    """The payload size of a GetRecords response, as the per-shard 2 MiB/s limit counts it."""
    return sum(len(r["Data"]) + len(r["PartitionKey"]) for r in response.get("Records", []))
