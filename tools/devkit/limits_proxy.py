"""A local Kinesis endpoint that enforces Kinesis' per-shard read limits in front of an emulator.

The emulators serve reads as fast as they can; AWS does not. This proxy forwards every call to
an emulator (kinesalite) and holds GetRecords to what AWS allows per shard:

- at most 5 GetRecords calls in any second;
- 2 MiB/s of data, with the burst AWS allows: a call may return up to 10 MiB, after which the
  shard answers ProvisionedThroughputExceededException until the rate is paid back (modelled as a
  credit of 10 MiB refilled at 2 MiB/s; a call is refused while the credit is below zero);
- at most 10,000 records and 10 MiB per call (a longer page is cut, and its NextShardIterator
  resumes after the last record returned);
- shard iterators expire 5 minutes after they were handed out (ExpiredIteratorException).

It also holds the control plane to its limits (:class:`ControlLimits`, AWS's figures by
default): DescribeStreamSummary 20 calls a second per account, DescribeStream 10 and
ListStreams 5 per account, ListShards 1,000 a second per stream, GetShardIterator 5 a second
per shard. A call past its limit is answered as AWS answers it (LimitExceededException;
ProvisionedThroughputExceededException for GetShardIterator) and counted
(:attr:`LimitsProxy.throttles`): many runs started in the same second show what they rode out.
In front of DynamoDB (moto_server) the same limits apply by table (``ControlLimits.dynamodb``).

It records who called and how the stream was named (:attr:`LimitsProxy.access_keys`, the
access key of each call's signature, and :attr:`LimitsProxy.named_by`: ``StreamName`` or
``StreamARN``; :attr:`LimitsProxy.signed`: each call's operation, key and the table or stream it
names), so a test can check which account's credentials reached which service, and what each
principal called. In front
of STS it can refuse a call as AWS does (:meth:`LimitsProxy.refuse`: a role whose trust policy
does not allow the caller).

It can also drop connections (:meth:`LimitsProxy.drop`): the next calls of an operation are
read and then answered by closing the connection, as an endpoint (or a load balancer in front
of it) closes a kept-alive connection a client was reusing. And it can gather calls
(:meth:`LimitsProxy.gather`): the first calls of an operation wait for each other and then go on
together, as the calls of many runs started by one schedule in the same second arrive.

Throttled calls count against the calls-per-second limit too, as on AWS. The limits are
settings (:class:`ShardLimits`): a benchmark models many shards on one machine at a reduced
per-shard rate, with the burst and the page size scaled alike. Per-shard statistics
(calls, throttled calls, bytes, timing) make "how close to the limit" measurable: see
:meth:`LimitsProxy.stats`. For tests and benchmarks; it binds 127.0.0.1 on a free port and
serves from a thread (Spark workers and other processes reach it over HTTP).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kinesis_batch.control.limits import ACCOUNT, LIMITS, STREAM

MIB = 1024 * 1024
CALLS_PER_SECOND = 5
BYTES_PER_SECOND = 2 * MIB
MAX_BYTES_PER_CALL = 10 * MIB
MAX_RECORDS_PER_CALL = 10_000
ITERATOR_LIFETIME = 300.0
_JSON = "application/x-amz-json-1.1"


#: A test's authorizer: (operation, access key, table or stream named) -> the error to answer, or None.
Authorize = Callable[[str, str, str], "tuple[str, str] | None"]


@dataclass(frozen=True)
class ShardLimits:
    """What the proxy allows each shard. The defaults are AWS's; :meth:`scaled` keeps AWS's
    proportions at another rate (a page and the burst credit hold 5 seconds of the rate)."""

    calls_per_second: int = CALLS_PER_SECOND
    bytes_per_second: int = BYTES_PER_SECOND
    max_bytes_per_call: int = MAX_BYTES_PER_CALL  # also the burst credit
    max_records_per_call: int = MAX_RECORDS_PER_CALL

    def __post_init__(self) -> None:
        for name in ("calls_per_second", "bytes_per_second", "max_bytes_per_call", "max_records_per_call"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")

    @classmethod
    def scaled(cls, bytes_per_second: int, calls_per_second: int = CALLS_PER_SECOND) -> ShardLimits:
        burst = bytes_per_second * MAX_BYTES_PER_CALL // BYTES_PER_SECOND
        return cls(calls_per_second, bytes_per_second, burst, MAX_RECORDS_PER_CALL)


SHARD, TABLE = "shard", "table"  # beside the product's ACCOUNT and STREAM scopes


@dataclass(frozen=True)
class Rate:
    """At most ``per_second`` calls in any second, counted apart for each ``scope``: the
    account (all calls), a stream, a shard, or a DynamoDB table."""

    per_second: int
    scope: str
    error: str = "LimitExceededException"


@dataclass(frozen=True)
class ControlLimits:
    """The control plane's limits by operation (its API name). The defaults are AWS's: the
    product's own table (kinesis_batch.control.limits, with its sources), and GetShardIterator's
    5 calls a second per shard."""

    rates: tuple[tuple[str, Rate], ...] = (
        *((name, Rate(int(rate.per_second), rate.scope)) for name, rate in LIMITS.items()),
        ("GetShardIterator", Rate(5, SHARD, "ProvisionedThroughputExceededException")),
    )

    @classmethod
    def none(cls) -> ControlLimits:
        return cls(())

    @classmethod
    def dynamodb(cls, per_second: int) -> ControlLimits:
        """The lease and history tables' own calls at ``per_second`` per table. AWS states no
        rate for them (it allows 500 table operations at a time per account); a test picks one
        low enough for many runs at once to meet it."""
        return cls(
            (
                ("CreateTable", Rate(per_second, TABLE)),
                ("DescribeTable", Rate(per_second, TABLE, "ThrottlingException")),
            )
        )

    def of(self, operation: str) -> Rate | None:
        return dict(self.rates).get(operation)

    @staticmethod
    def scope_key(rate: Rate, request: dict[str, Any]) -> str:
        stream = str(request.get("StreamARN") or request.get("StreamName") or "")
        return {
            ACCOUNT: "",
            STREAM: stream,
            SHARD: f"{stream}/{request.get('ShardId', '')}",
            TABLE: str(request.get("TableName", "")),
        }[rate.scope]


@dataclass
class ShardStats:
    """What one shard's readers got from the proxy."""

    calls: int = 0
    throttled: int = 0
    bytes: int = 0
    first_call: float | None = None
    last_call: float | None = None
    bytes_before_last_call: int = 0
    _recent: deque[float] = field(default_factory=deque, repr=False)
    _credit: float = MAX_BYTES_PER_CALL
    _credit_at: float = 0.0
    _records: int = 0  # records served, for the average record size

    def sustained_rate(self) -> float | None:
        """Bytes per second from the first call to the start of the last one (the last call's
        bytes are not paid for inside that span); None with fewer than two calls."""
        if self.first_call is None or self.last_call is None or self.last_call <= self.first_call:
            return None
        return self.bytes_before_last_call / (self.last_call - self.first_call)


class LimitsProxy:
    """``with LimitsProxy(upstream_url) as proxy:`` point clients at ``proxy.url``."""

    def __init__(
        self,
        upstream: str,
        *,
        limits: ShardLimits = ShardLimits(),
        control: ControlLimits = ControlLimits(),
        iterator_lifetime: float = ITERATOR_LIFETIME,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock``: the control plane's seconds (a test in this process may pass the clock its
        code under test sleeps on, so waiting out a limit takes no wall time)."""
        self.upstream = urlsplit(upstream)
        self.clock = clock
        self.limits = limits
        self.control = control
        self._calls: dict[tuple[str, str], deque[float]] = {}  # (operation, scope key) -> recent calls
        self.throttles: dict[str, int] = {}  # operation -> control-plane calls refused so far
        self.calls: dict[str, int] = {}  # operation -> calls answered or refused (dropped ones aside)
        self.access_keys: dict[str, set[str]] = {}  # operation -> the access keys its calls were signed with
        self.named_by: dict[str, set[str]] = {}  # operation -> StreamName / StreamARN, as its calls named the stream
        # (operation, access key, the table or stream the call names: "" for one by iterator)
        self.signed: list[tuple[str, str, str]] = []
        # operation -> (error code, message) it is answered with, and how many calls are served first
        self._refusals: dict[str, tuple[str, str]] = {}
        self._served_before_refusal: dict[str, int] = {}
        self._authorize: Authorize | None = None
        self.iterator_lifetime = iterator_lifetime
        self._lock = threading.Lock()
        self._shards: dict[tuple[str, str], ShardStats] = {}  # (stream, shard id) -> what it served
        self._iterators: dict[str, tuple[str, str, float]] = {}  # iterator -> stream, shard, issued at
        self._local = threading.local()
        self._drops: dict[str, int] = {}  # operation -> calls still to drop
        self._drop_every: tuple[int, frozenset[str]] = (0, frozenset())  # every nth call of these operations
        self._counted_for_drops = 0  # calls of those operations so far
        self._gathering: dict[str, threading.Barrier] = {}  # operation -> the calls it holds
        self._gathered_calls: dict[str, int] = {}  # operation -> calls held so far
        self.dropped: dict[str, int] = {}  # operation -> calls dropped so far
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> LimitsProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def drop(self, operation: str, calls: int = 1) -> None:
        """Close the connection, unanswered, on each of the next ``calls`` calls of ``operation``
        (its API name: ``DescribeStreamSummary``)."""
        with self._lock:
            self._drops[operation] = self._drops.get(operation, 0) + calls

    def drop_every(self, nth: int, operations: frozenset[str]) -> None:
        """From now on, close the connection, unanswered, on every ``nth`` call of ``operations``
        (counted together), as a flaky load balancer in front of the control plane does."""
        with self._lock:
            self._drop_every, self._counted_for_drops = (nth, operations), 0

    def gather(self, operation: str, calls: int, *, timeout: float = 60.0) -> None:
        """Hold the next ``calls`` calls of ``operation`` until all of them arrived (at most
        ``timeout`` seconds), then serve them at once."""
        with self._lock:
            self._gathering[operation] = threading.Barrier(calls, timeout=timeout)
            self._gathered_calls[operation] = 0

    def _gathered(self, operation: str) -> None:
        with self._lock:
            barrier = self._gathering.get(operation)
            if barrier is not None and self._gathered_calls.get(operation, 0) + 1 >= barrier.parties:
                del self._gathering[operation]  # the last of them: later calls go straight on
            if barrier is not None:
                self._gathered_calls[operation] = self._gathered_calls.get(operation, 0) + 1
        if barrier is not None:
            with contextlib.suppress(threading.BrokenBarrierError):  # not all came: serve those that did
                barrier.wait()

    def refuse(self, operation: str, code: str, message: str, *, after: int = 0) -> None:
        """Answer every call of ``operation`` (from now on, but for the next ``after`` ones, which
        are served) with error ``code`` (HTTP 403), in the protocol the call speaks (JSON, or the
        query protocol's XML: STS)."""
        with self._lock:
            self._refusals[operation] = (code, message)
            self._served_before_refusal[operation] = after

    def authorize(self, check: Authorize | None) -> None:
        """From now on, ask ``check`` of each call (its operation, the access key it is signed
        with, the table or stream it names, "" for a call by iterator) and answer it with the
        error (code, message) it returns, if any: a test's policy evaluator, refusing as IAM
        does. None: every call passes again."""
        with self._lock:
            self._authorize = check

    def _record(self, operation: str, body: bytes, headers: dict[str, str]) -> tuple[str, str]:
        signed = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        key = signed.partition("Credential=")[2].partition("/")[0]
        named = [name for name in ("StreamARN", "StreamName") if f'"{name}"'.encode() in body]
        resource = ""
        with contextlib.suppress(ValueError, AttributeError):  # the query protocol's form: no JSON
            request = json.loads(body or b"{}")
            resource = str(request.get("TableName") or request.get("StreamARN") or request.get("StreamName") or "")
            if not resource and "DatabaseName" in request:  # a Glue Data Catalog's call: DATABASE/TABLE
                resource = f"{request['DatabaseName']}/{request.get('Name', '')}"
        with self._lock:
            self.calls[operation] = self.calls.get(operation, 0) + 1
            self.access_keys.setdefault(operation, set()).add(key)
            self.signed.append((operation, key, resource))
            if named:
                self.named_by.setdefault(operation, set()).update(named)
        return key, resource

    def dropping(self, target: str) -> bool:
        """Whether this call (its X-Amz-Target) is one to drop; counted if so."""
        operation = target.rsplit(".", 1)[-1]
        with self._lock:
            nth, operations = self._drop_every
            if operation in operations:
                self._counted_for_drops += 1
            periodic = operation in operations and self._counted_for_drops % nth == 0
            if self._drops.get(operation, 0) < 1 and not periodic:
                return False
            if not periodic:
                self._drops[operation] -= 1
            self.dropped[operation] = self.dropped.get(operation, 0) + 1
            return True

    def stats(self, stream: str | None = None) -> dict[str, ShardStats]:
        """Each shard's statistics by shard id: of ``stream``, or of the one stream read so far."""
        with self._lock:
            streams = {name for name, _ in self._shards}
            if stream is None and len(streams) > 1:
                raise ValueError(f"shards of {len(streams)} streams were read: name the stream")
            return {shard: stats for (name, shard), stats in self._shards.items() if stream in (None, name)}

    # -- the calls ---------------------------------------------------------------------------

    def handle(self, target: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        operation = operation_of(target, body)
        self._gathered(operation)
        key, resource = self._record(operation, body, headers)
        with self._lock:
            refused = self._refusals.get(operation)
            if refused is not None and self._served_before_refusal.get(operation, 0) > 0:
                self._served_before_refusal[operation] -= 1
                refused = None
            check = self._authorize
        if refused is None and check is not None:
            refused = check(operation, key, resource)
        if refused is not None:
            return 403, _error(target, *refused)
        refusal = self._control(operation, body)
        if refusal is not None:
            return 400, json.dumps({"__type": refusal, "message": f"Rate exceeded for {operation}"}).encode()
        if operation == "GetRecords":
            return self._get_records(json.loads(body), headers)
        status, answer = self.forward(body, headers)
        if operation == "GetShardIterator" and status == 200:
            request = json.loads(body)
            iterator = json.loads(answer)["ShardIterator"]
            self._remember(iterator, request.get("StreamName") or request.get("StreamARN", ""), request["ShardId"])
        return status, answer

    def _control(self, operation: str, body: bytes) -> str | None:
        """The error a call past its control-plane limit is answered with, or None to serve it.
        Refused calls count against the limit too, as on AWS."""
        rate = self.control.of(operation)
        if rate is None:
            return None
        key = (operation, ControlLimits.scope_key(rate, json.loads(body or b"{}")))
        now = self.clock()
        with self._lock:
            recent = self._calls.setdefault(key, deque())
            while recent and now - recent[0] >= 1.0:
                recent.popleft()
            recent.append(now)
            if len(recent) <= rate.per_second:
                return None
            self.throttles[operation] = self.throttles.get(operation, 0) + 1
        return rate.error

    def _get_records(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        iterator = request["ShardIterator"]
        with self._lock:
            stream, shard, issued = self._iterators.get(iterator, ("", "unknown", time.monotonic()))
            stats = self._shards.setdefault(
                (stream, shard), ShardStats(_credit=self.limits.max_bytes_per_call, _credit_at=time.monotonic())
            )
            now = time.monotonic()
            refusal = self._admit(stats, now, issued)
        if refusal is not None:
            return 400, json.dumps({"__type": refusal, "message": f"{refusal} for shard {shard}"}).encode()
        most = self.limits.max_records_per_call
        request["Limit"] = min(int(request.get("Limit", most)), most, self._records_per_page(stats))
        status, answer = self.forward(json.dumps(request).encode(), headers)
        if status != 200:
            return status, answer
        page = json.loads(answer)
        size = self._cut_to_size(page, stream, shard, headers)
        with self._lock:
            stats.bytes_before_last_call = stats.bytes
            stats.bytes += size
            stats._credit -= size
            stats._records += len(page.get("Records", []))
        if page.get("NextShardIterator"):
            self._remember(page["NextShardIterator"], stream, shard)
        return 200, json.dumps(page).encode()

    def _records_per_page(self, stats: ShardStats) -> int:
        """How many records to ask the emulator for: a page's bytes at the shard's average record
        size so far (and some), as AWS stops reading at the page's size; not 10,000 records of
        which the cut keeps a few hundred at a low rate, which costs the emulator and this proxy
        ten times the work."""
        if not stats._records or not stats.bytes:
            return self.limits.max_records_per_call
        return max(1, int(self.limits.max_bytes_per_call / (stats.bytes / stats._records) * 1.1) + 1)

    def _admit(self, stats: ShardStats, now: float, issued: float) -> str | None:
        """Count the call; the exception AWS would answer with, or None to serve it."""
        stats.calls += 1
        stats.first_call = now if stats.first_call is None else stats.first_call
        stats.last_call = now
        if now - issued > self.iterator_lifetime:
            return "ExpiredIteratorException"
        while stats._recent and now - stats._recent[0] >= 1.0:
            stats._recent.popleft()
        stats._recent.append(now)
        limits = self.limits
        stats._credit = min(
            limits.max_bytes_per_call, stats._credit + (now - stats._credit_at) * limits.bytes_per_second
        )
        stats._credit_at = now
        if len(stats._recent) > limits.calls_per_second or stats._credit < 0:
            stats.throttled += 1
            return "ProvisionedThroughputExceededException"
        return None

    def _cut_to_size(self, page: dict[str, Any], stream: str, shard: str, headers: dict[str, str]) -> int:
        """Keep at most a page's bytes of records; when cut, resume after the last record kept."""
        size, kept = 0, 0
        for record in page.get("Records", []):
            record_size = _decoded_length(record["Data"]) + len(record["PartitionKey"].encode())
            if kept and size + record_size > self.limits.max_bytes_per_call:
                break
            size += record_size
            kept += 1
        if kept < len(page.get("Records", [])):
            page["Records"] = page["Records"][:kept]
            resume = {
                "StreamARN" if stream.startswith("arn:") else "StreamName": stream,
                "ShardId": shard,
                "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
                "StartingSequenceNumber": page["Records"][-1]["SequenceNumber"],
            }
            headers = {**headers, "X-Amz-Target": "Kinesis_20131202.GetShardIterator"}
            _, answer = self.forward(json.dumps(resume).encode(), headers)
            page["NextShardIterator"] = json.loads(answer)["ShardIterator"]
            page.pop("ChildShards", None)  # the shard is not finished yet
        return size

    def _remember(self, iterator: str, stream: str, shard: str) -> None:
        with self._lock:
            if len(self._iterators) > 100_000:  # iterators are single use; forget the oldest
                for old in list(self._iterators)[:50_000]:
                    del self._iterators[old]
            self._iterators[iterator] = (stream, shard, time.monotonic())

    def forward(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        """One call to the emulator, on this thread's kept-alive connection (renewed once if the
        emulator closed it while idle)."""
        passed = {k: v for k, v in headers.items() if k.lower() in ("x-amz-target", "content-type", "authorization")}
        passed.update({k: v for k, v in headers.items() if k.lower().startswith("x-amz-")})
        for attempt in (1, 2):
            connection = getattr(self._local, "connection", None)
            if connection is None:
                host = self.upstream.hostname or "127.0.0.1"
                connection = self._local.connection = http.client.HTTPConnection(host, self.upstream.port, timeout=60)
            try:
                connection.request("POST", "/", body=body, headers=passed)
                response = connection.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                self._local.connection = None
                connection.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def operation_of(target: str, body: bytes) -> str:
    """A call's operation: its X-Amz-Target's (JSON protocols), else its form's Action (the query
    protocol: STS)."""
    if target:
        return target.rsplit(".", 1)[-1]
    return parse_qs(body.decode(errors="replace")).get("Action", [""])[0]


def _error(target: str, code: str, message: str) -> bytes:
    if target:
        return json.dumps({"__type": code, "message": message}).encode()
    return (
        f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error>"
        "<RequestId>0</RequestId></ErrorResponse>"
    ).encode()


def _decoded_length(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _handler(proxy: LimitsProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = dict(self.headers.items())
            if proxy.dropping(self.headers.get("X-Amz-Target", "") or operation_of("", body)):
                self.close_connection = True  # no answer: the client sees the connection closed
                return
            try:
                status, answer = proxy.handle(self.headers.get("X-Amz-Target", ""), body, headers)
            except (OSError, http.client.HTTPException) as exc:
                status, answer = 500, json.dumps({"__type": "InternalFailure", "message": str(exc)}).encode()
            self.send_response(status)
            self.send_header("Content-Type", _JSON if self.headers.get("X-Amz-Target") else "text/xml")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: Any) -> None:  # the emulator logs; this would only repeat it
            return

    return Handler
