"""``moto_server`` with DynamoDB's atomicity: the local stack's DynamoDB, S3 and Glue endpoint.

moto's DynamoDB backend holds no lock, and moto_server serves each request on a thread of its
own. Two conditional writes to one item can then both pass their condition (seen here: two
workers both took one lease under load), and concurrent TransactWriteItems fail with 500s. AWS
applies each conditional write and each transaction atomically. This server is moto's own app,
with one lock around DynamoDB requests: they run one at a time, S3 and Glue stay concurrent.

Two of moto_server's costs per request are dropped, as the whole test suite's CPU goes through
it: the listing of moto's package folder to find the backend a host names (about 15% of its
CPU, measured with py-spy; the folder does not change while it runs), and a log line per
request (nobody reads them; errors are still logged).

    python -m devkit.moto_serial -H 127.0.0.1 -p PORT
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterable
from typing import Any

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def serialize_dynamodb(app: WSGIApp) -> WSGIApp:
    """``app``, with DynamoDB requests (``X-Amz-Target: DynamoDB_...``) served one at a time."""
    lock = threading.Lock()

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            return app(environ, start_response)
        with lock:
            return list(app(environ, start_response))  # the whole answer, made under the lock

    return serve


def main(argv: list[str] | None = None) -> None:
    import logging

    from moto import backends
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    class QuietHandler(MotoRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args(argv)
    app = serialize_dynamodb(DomainDispatcherApplication(create_backend_app))
    run_simple(args.host, args.port, app, threaded=True, request_handler=QuietHandler)


if __name__ == "__main__":
    main()
