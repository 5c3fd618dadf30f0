"""DuckDB as the outside reader of ``benchmarks.tables``: its own ``delta_scan`` and
``iceberg_scan`` (the extensions from PyPI's duckdb-extension-* wheels, loaded from their files:
DuckDB's extension repository need not be reachable), S3 through its httpfs with the stack's
moto endpoint. Every query is timed warm: the median of a few runs after one that is not counted.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from kinesis_batch.output import Sink

REPEATS = 5
# avro before iceberg: iceberg's manifests need it, and it would try to download it otherwise.
EXTENSIONS = ("avro", "httpfs", "delta", "iceberg")


@dataclass(frozen=True)
class Timed:
    rows: int  # what the query counted
    seconds: float  # median, warm


def connect() -> Any:
    """A DuckDB connection with the extensions loaded and S3 pointed at the stack's moto."""
    import duckdb
    from duckdb_extensions import import_extension

    connection = duckdb.connect()
    for name in EXTENSIONS:
        import_extension(name, con=connection)
        connection.sql(f"LOAD {name}")
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    if endpoint:
        connection.sql(
            "CREATE SECRET moto (TYPE s3, KEY_ID '{}', SECRET '{}', REGION '{}', ENDPOINT '{}', URL_STYLE 'path', "
            "USE_SSL false)".format(
                os.environ.get("AWS_ACCESS_KEY_ID", "test"),
                os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
                os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
                endpoint.split("://", 1)[-1],
            )
        )
    return connection


def scan(sink: Sink) -> str:
    """The table as DuckDB names it: ``delta_scan('ROOT')`` or ``iceberg_scan('METADATA')``."""
    if sink.format == "delta":
        return f"delta_scan('{sink.uri}')"
    table = sink.catalog.load_table(sink.identifier)  # type: ignore[attr-defined]
    return f"iceberg_scan('{table.metadata_location}')"


def one_day(connection: Any, sink: Sink, day: date, partition_column: str | None) -> Timed:
    """Count one day's events as a user of this layout writes it: by the event time (Iceberg's
    hidden partitioning prunes from it, and so does a table's file statistics), or by Delta's
    partition column where the table has one."""
    since, until = day.isoformat(), (day + timedelta(days=1)).isoformat()
    where = (
        f"{partition_column} = DATE '{since}'"
        if partition_column
        else f"event_time >= TIMESTAMPTZ '{since} 00:00:00+00' AND event_time < TIMESTAMPTZ '{until} 00:00:00+00'"
    )
    return timed(connection, f"SELECT count(*) FROM {scan(sink)} WHERE {where}")


def full_scan(connection: Any, sink: Sink) -> Timed:
    """Every row, several columns of every type (numbers, strings, a struct's field)."""
    query = f"SELECT count(*), sum(amount), max(message), max(page.url), max(user.country) FROM {scan(sink)}"
    return timed(connection, query)


def timed(connection: Any, query: str) -> Timed:
    connection.sql(query).fetchall()  # warm: metadata and file handles, as a reader that just queried
    seconds = []
    rows = 0
    for _ in range(REPEATS):
        started = time.perf_counter()
        rows = int(connection.sql(query).fetchall()[0][0])
        seconds.append(time.perf_counter() - started)
    return Timed(rows, statistics.median(seconds))


__all__ = ["Timed", "connect", "full_scan", "one_day", "scan"]
