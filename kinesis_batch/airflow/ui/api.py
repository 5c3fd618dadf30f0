"""The plugin's FastAPI app: the consumer page and the JSON behind it, read-only.

Airflow mounts plugin apps without its own authentication, so every route here depends on
an authenticated Airflow user allowed to read DAGs (a Bearer token, or the UI's ``_token``
cookie); anonymous requests get 401. Clients come from the Airflow AWS connection named by
``[kinesis_batch] aws_conn_id`` (default ``aws_default``), the same as the DAGs use.

Routes (under the plugin's ``/kinesis-batch`` prefix):
- ``GET /``                               the page (Airflow shows it in its navigation)
- ``GET /api/fleet``                      every stream of the streams file, its group and status, worst first
- ``GET /api/streams``                    streams, each with its default lease table and whether it exists
- ``GET /api/streams/{stream}``           lineage, leases, checkpoints, pending batches, lag, retention risk
- ``GET /api/streams/{stream}/history``   checkpoint history (``?run=RUN_ID`` for one run)
- ``GET /api/streams/{stream}/runs``      the newest runs over that history: records (and, decoding, rows
                                          and dead letters), lag when each began
``?table=`` names a lease table other than the default ``kinesis-batch-STREAM``.

A stream with an entry in the streams file is read as its runs read it: by its ARN when the
entry names one, through its role (``role_arn``, ``external_id``) for every Kinesis call, its
lease table the entry's unless ``?table=`` names one; the lease tables and outputs with the
connection's own credentials. So a stream of another account opens from the fleet as in the CLI.

``GET /api/streams/{stream}?output=...&format=...&catalog=...`` also reads the output's last
batch of this consumer (``"output"``: format, uri, last_batch, records, disagreeing_shards, and
``table``: its files, mean file size, last maintenance, a small-files warning) and marks each
shard of that batch with ``output_end`` / ``output_agrees``; without ``output`` the output is
not known and ``"output"`` is null. The output is opened with the same AWS connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from airflow.api_fastapi.core_api.security import requires_access_dag
from airflow.configuration import conf
from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from kinesis_batch import defaults
from kinesis_batch.aws import aws_call
from kinesis_batch.errors import IllegalArgumentError, KinesisBatchError, classify
from kinesis_batch.parsers import default_table, validate_stream_name, validate_table_name
from kinesis_batch.status import history_rows, run_rows, stream_status

if TYPE_CHECKING:
    from kinesis_batch.airflow.hook import KinesisBatchHook
    from kinesis_batch.output import Stored


def _hook() -> KinesisBatchHook:
    from kinesis_batch.airflow.hook import KinesisBatchHook

    return KinesisBatchHook(aws_conn_id=conf.get("kinesis_batch", "aws_conn_id", fallback=defaults.AWS_CONN_ID))


class Clients:
    """The page's boto3 clients, built again only when the Airflow connection changed, not on
    every request (a client costs tens of milliseconds; reading the connection is cheap).
    boto3 clients are thread-safe; the lock only keeps two requests from building at once."""

    def __init__(self, make: Callable[[], KinesisBatchHook] = _hook) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._cached: tuple[str, KinesisBatchHook, Any, Any] | None = None

    def get(self) -> tuple[KinesisBatchHook, Any, Any]:
        """(hook, kinesis client, dynamodb client) for the connection as it is now."""
        hook = self._make()
        version = hook.connection_fingerprint()
        with self._lock:
            if self._cached is None or self._cached[0] != version:
                self._cached = (version, hook, hook.kinesis(), hook.dynamodb())
            return self._cached[1:]


def create_app() -> FastAPI:
    clients = Clients()
    app = FastAPI(
        title="kinesis-batch",
        description="Kinesis consumers run by kinesis-batch: lineage, leases, checkpoints, lag, history.",
        dependencies=[Depends(requires_access_dag("GET"))],
    )

    @app.exception_handler(KinesisBatchError)
    async def _error(_request: Request, exc: KinesisBatchError) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=classify(exc).http_status)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return files("kinesis_batch.airflow.ui").joinpath("page.html").read_text(encoding="utf-8")

    @app.get("/api/streams")
    def streams() -> list[dict[str, Any]]:
        _, kinesis, dynamodb = clients.get()
        names = _paginate(kinesis, "list_streams", "StreamNames")
        tables = set(_paginate(dynamodb, "list_tables", "TableNames"))
        return [
            {"stream": name, "table": default_table(name), "consumer": default_table(name) in tables}
            for name in sorted(names)
        ]

    @app.get("/api/fleet")
    def fleet() -> dict[str, Any]:
        """Every stream of the streams file (``[kinesis_batch] streams_file``) with its group and
        status, worst first (kinesis_batch.status.fleet); no file, no streams."""
        from kinesis_batch.airflow.streams import streams_file
        from kinesis_batch.status.fleet import fleet_of_file

        hook, kinesis, dynamodb = clients.get()
        path = streams_file()
        sts = hook.sts_endpoint()
        lines = fleet_of_file(path, kinesis, dynamodb, s3=hook.s3(), sts_endpoint_url=sts) if path.exists() else []
        return {"streams_file": str(path), "streams": [line.to_json() for line in lines]}

    @app.get("/api/streams/{stream}")
    def stream(
        stream: str,
        table: str | None = None,
        output: str | None = None,
        output_format: str | None = Query(None, alias="format"),
        catalog: str | None = None,
    ) -> dict[str, Any]:
        hook, kinesis, dynamodb = clients.get()
        read = _read_as_its_runs(hook, kinesis, stream, table)
        sink = _sink(hook, stream, read.table, output, output_format, catalog)
        return stream_status(read.kinesis, dynamodb, read.stream_id, read.table, output=sink).to_json()

    @app.get("/api/streams/{stream}/history")
    def history(stream: str, table: str | None = None, run: str | None = None) -> list[dict[str, Any]]:
        hook, kinesis, dynamodb = clients.get()
        read = _read_as_its_runs(hook, kinesis, stream, table)
        return history_rows(read.kinesis, dynamodb, read.stream_id, read.table, run_id=run or None)

    @app.get("/api/streams/{stream}/runs")
    def runs(stream: str, table: str | None = None) -> list[dict[str, Any]]:
        hook, kinesis, dynamodb = clients.get()
        read = _read_as_its_runs(hook, kinesis, stream, table)
        return run_rows(read.kinesis, dynamodb, read.stream_id, read.table)

    return app


def _table(stream: str, table: str | None) -> str:
    return validate_table_name(table or default_table(stream))


@dataclass(frozen=True)
class StreamRead:
    """How the page reads one stream: the Kinesis client, what its calls name the stream by, and
    its lease table."""

    kinesis: Any
    stream_id: str
    table: str


def _read_as_its_runs(hook: KinesisBatchHook, kinesis: Any, stream: str, table: str | None) -> StreamRead:
    """``stream`` as its streams-file entry reads it (its role's client, assumed at the
    connection's STS; its ARN; its lease table), else with the connection's client by name;
    ``table`` (``?table=``) wins over the entry's."""
    from kinesis_batch.airflow.streams import read_streams, streams_file
    from kinesis_batch.aws import assumed_role

    validate_stream_name(stream)
    entries, _ = read_streams(streams_file())
    settings = next((entry.settings for entry in entries if entry.settings.stream == stream), None)
    if settings is None:
        return StreamRead(kinesis, stream, _table(stream, table))
    theirs = kinesis
    if settings.role_arn:
        sts = hook.sts_endpoint()
        theirs = assumed_role(kinesis, settings.role_arn, settings.external_id, sts_endpoint_url=sts)
    return StreamRead(theirs, settings.stream_id, validate_table_name(table or settings.lease_table))


def _sink(
    hook: KinesisBatchHook, stream: str, table: str, output: str | None, format: str | None, catalog: str | None
) -> Stored | None:
    """The output the query names (``?output=``, with ``?format=`` and ``?catalog=``), or None."""
    if not output:
        if format or catalog:
            raise IllegalArgumentError("?format= and ?catalog= go with ?output= (the output to compare with)")
        return None
    from kinesis_batch.output import Output

    return Output(format or defaults.FORMAT, output, catalog or None).open(app=table, stream=stream, s3=hook.s3())


def _paginate(client: Any, operation: str, key: str) -> list[str]:
    pages = aws_call(operation, "", lambda: list(client.get_paginator(operation).paginate()))
    return [name for page in pages for name in page[key]]
