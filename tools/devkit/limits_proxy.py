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

It can also drop connections (:meth:`LimitsProxy.drop`): the next calls of an operation are
read and then answered by closing the connection, as an endpoint (or a load balancer in front
of it) closes a kept-alive connection a client was reusing.

Throttled calls count against the calls-per-second limit too, as on AWS. The limits are
settings (:class:`ShardLimits`): a benchmark models many shards on one machine at a reduced
per-shard rate, with the burst and the page size scaled alike. Per-shard statistics
(calls, throttled calls, bytes, timing) make "how close to the limit" measurable: see
:meth:`LimitsProxy.stats`. For tests and benchmarks; it binds 127.0.0.1 on a free port and
serves from a thread (Spark workers and other processes reach it over HTTP).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

MIB = 1024 * 1024
CALLS_PER_SECOND = 5
BYTES_PER_SECOND = 2 * MIB
MAX_BYTES_PER_CALL = 10 * MIB
MAX_RECORDS_PER_CALL = 10_000
ITERATOR_LIFETIME = 300.0
_JSON = "application/x-amz-json-1.1"


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
        self, upstream: str, *, limits: ShardLimits = ShardLimits(), iterator_lifetime: float = ITERATOR_LIFETIME
    ) -> None:
        self.upstream = urlsplit(upstream)
        self.limits = limits
        self.iterator_lifetime = iterator_lifetime
        self._lock = threading.Lock()
        self._shards: dict[str, ShardStats] = {}
        self._iterators: dict[str, tuple[str, str, float]] = {}  # iterator -> stream, shard, issued at
        self._local = threading.local()
        self._drops: dict[str, int] = {}  # operation -> calls still to drop
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

    def dropping(self, target: str) -> bool:
        """Whether this call (its X-Amz-Target) is one to drop; counted if so."""
        operation = target.rsplit(".", 1)[-1]
        with self._lock:
            if self._drops.get(operation, 0) < 1:
                return False
            self._drops[operation] -= 1
            self.dropped[operation] = self.dropped.get(operation, 0) + 1
            return True

    def stats(self) -> dict[str, ShardStats]:
        with self._lock:
            return dict(self._shards)

    # -- the calls ---------------------------------------------------------------------------

    def handle(self, target: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        operation = target.rsplit(".", 1)[-1]
        if operation == "GetRecords":
            return self._get_records(json.loads(body), headers)
        status, answer = self.forward(body, headers)
        if operation == "GetShardIterator" and status == 200:
            request = json.loads(body)
            iterator = json.loads(answer)["ShardIterator"]
            self._remember(iterator, request["StreamName"], request["ShardId"])
        return status, answer

    def _get_records(self, request: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        iterator = request["ShardIterator"]
        with self._lock:
            stream, shard, issued = self._iterators.get(iterator, ("", "unknown", time.monotonic()))
            stats = self._shards.setdefault(
                shard, ShardStats(_credit=self.limits.max_bytes_per_call, _credit_at=time.monotonic())
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
                "StreamName": stream,
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


def _decoded_length(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _handler(proxy: LimitsProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = dict(self.headers.items())
            if proxy.dropping(self.headers.get("X-Amz-Target", "")):
                self.close_connection = True  # no answer: the client sees the connection closed
                return
            try:
                status, answer = proxy.handle(self.headers.get("X-Amz-Target", ""), body, headers)
            except (OSError, http.client.HTTPException) as exc:
                status, answer = 500, json.dumps({"__type": "InternalFailure", "message": str(exc)}).encode()
            self.send_response(status)
            self.send_header("Content-Type", _JSON)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: Any) -> None:  # the emulator logs; this would only repeat it
            return

    return Handler
