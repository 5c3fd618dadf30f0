"""A local S3 endpoint that forwards every request to another (moto_server) and records it.

The table files of a run are written and read by pyarrow, delta-rs and pyiceberg, whose S3
clients are not botocore's: a recorder of botocore calls does not see them. Pointed at this
proxy (``AWS_ENDPOINT_URL_S3``, or an output's S3 settings), every one of their requests passes
here, from any process, and is kept as it was made (:class:`S3Request`: method, bucket, key and
query), for a test to ask what IAM authorizes each by. Bodies and answers pass unchanged; a
request sent in chunks (``Transfer-Encoding: chunked``) is passed on whole.

Given principals (an access key's ARN and identity policy), it enforces them too: a request
signed with one of their keys that the document does not allow is answered as S3 answers it,
403 AccessDenied in IAM's words, and never passed on.

It serves from a process of its own (``python -m devkit.s3_recorder UPSTREAM PORT RECORD
[PRINCIPALS]``, each request a line of JSON in RECORD): deltalake's Python binding holds the GIL while its S3 client
waits for an answer, so a proxy thread in the waiting process would never answer it. For tests;
it binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import http.client
import json
import re
import sys
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.sax.saxutils import escape

from devkit.iam_policy import Principal, Request, allowed, not_authorized, s3_requests, signer
from devkit.s3_request import S3Request

#: The keys of a DeleteObjects request's body.
DELETED = re.compile(r"<Key>([^<]*)</Key>")
XML = '<?xml version="1.0" encoding="UTF-8"?>\n'
#: Headers that describe one hop's connection, not the request: never passed on.
HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"})


class S3Recorder:
    """``with S3Recorder(upstream_url, log_dir) as s3:`` point clients at ``s3.url``; then
    ``s3.requests()``: every request so far, in order. ``enforce``: the principals held to
    their documents, by access key (``"*"``: any other key's)."""

    def __init__(self, upstream: str, log_dir: Path, enforce: dict[str, Principal] | None = None) -> None:
        self.upstream = upstream
        self.log_dir = log_dir
        self.record = log_dir / "s3-requests.jsonl"
        self.principals = log_dir / "s3-principals.json"
        self.enforce = enforce or {}
        self._server: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    def __enter__(self) -> S3Recorder:
        from devkit.stack import free_port, spawn_server

        port = free_port()
        self.principals.write_text(json.dumps({key: asdict(one) for key, one in self.enforce.items()}))
        argv = [sys.executable, "-m", "devkit.s3_recorder", self.upstream, str(port), str(self.record)]
        tools = str(Path(__file__).resolve().parent.parent)
        self._server = spawn_server(
            "s3-recorder", [*argv, str(self.principals)], port=port, log_dir=self.log_dir, grace=0.5,
            env={"PYTHONPATH": tools},
        )  # fmt: skip
        return self

    def __exit__(self, *_: object) -> None:
        self._server.stop()

    def requests(self) -> list[S3Request]:
        if not self.record.exists():
            return []
        lines = self.record.read_text().splitlines()
        return [S3Request(**{**body, "query": tuple(map(tuple, body["query"])), "deleted": tuple(body["deleted"])})
                for body in map(json.loads, lines)]  # fmt: skip


class _Proxy:
    """The server's side: forwards each request to ``upstream``, appends it to ``record``."""

    def __init__(self, upstream: str, record: Path, principals: dict[str, Principal]) -> None:
        self.upstream = urlsplit(upstream)
        self.record = record
        self.principals = principals
        self._lock = threading.Lock()

    def keep(self, method: str, target: str, headers: dict[str, str], body: bytes) -> S3Request:
        parts = urlsplit(target)
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
        query = tuple(parse_qsl(parts.query, keep_blank_values=True))
        copied = unquote(headers.get("x-amz-copy-source", ""))
        deleted = tuple(DELETED.findall(body.decode(errors="replace"))) if ("delete", "") in query else ()
        agent = headers.get("user-agent", "")
        signer = headers.get("authorization", "").partition("Credential=")[2].partition("/")[0]
        made = S3Request(method, bucket, key, query, copied, deleted, agent, signer)
        with self._lock, self.record.open("a") as out:
            out.write(json.dumps(asdict(made)) + "\n")
        return made

    def refusal(self, made: S3Request) -> bytes | None:
        """S3's answer to a request its signer's document does not allow (None: it is allowed)."""
        principal = signer(self.principals, made.signer)
        if principal is None:
            return None
        refused: Request | None = next((r for r in s3_requests([made]) if not allowed(principal.document, r)), None)
        if refused is None:
            return None
        said = escape(not_authorized(principal.arn, refused))
        return f"{XML}<Error><Code>AccessDenied</Code><Message>{said}</Message></Error>".encode()

    def forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection(self.upstream.hostname or "127.0.0.1", self.upstream.port, timeout=60)
        passed = {k: v for k, v in headers.items() if k.lower() not in HOP}
        passed["Content-Length"] = str(len(body))
        connection.request(method, target, body=body, headers=passed)
        return connection.getresponse()


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() != "chunked":
        return handler.rfile.read(int(handler.headers.get("Content-Length", 0) or 0))
    body = bytearray()
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while handler.rfile.readline().strip():  # trailers, up to the blank line
                pass
            return bytes(body)
        body += handler.rfile.read(size)
        handler.rfile.readline()  # the chunk's CRLF


def _handler(recorder: _Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _pass(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            body = _read_body(self)
            refusal = recorder.refusal(recorder.keep(self.command, self.path, headers, body))
            if refusal is not None:
                self._answer(403, [("Content-Type", "application/xml")], refusal)
                return
            response = recorder.forward(self.command, self.path, dict(self.headers.items()), body)
            passed = [(k, v) for k, v in response.getheaders() if k.lower() not in {*HOP, "content-length"}]
            self._answer(response.status, passed, response.read(), response.getheader("Content-Length"))

        def _answer(
            self, status: int, headers: list[tuple[str, str]], answer: bytes, length: str | None = None
        ) -> None:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            # A HEAD's Content-Length is the object's size, with no body (a refused HEAD's: none).
            self.send_header("Content-Length", length if self.command == "HEAD" and length else str(len(answer)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _pass

        def log_message(self, *_: Any) -> None:
            return

    return Handler


def serve(upstream: str, port: int, record: Path, principals: Path) -> None:
    held = {key: Principal(**one) for key, one in json.loads(principals.read_text()).items()}
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(_Proxy(upstream, record, held)))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))


__all__ = ["S3Recorder"]
