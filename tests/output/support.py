"""Sinks of every format, local and on S3 (moto), and reading their rows back with each format's
own reader (pyarrow for parquet folders, deltalake, pyiceberg)."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from kinesis_batch import Checkpoint, LeaseLostError
from kinesis_batch.aws import s3_settings
from kinesis_batch.columns import RAW, ROW_SCHEMA
from kinesis_batch.config import RunConfig
from kinesis_batch.output import Sink, Stored, open_sink
from kinesis_batch.storage.records import CommitRecord, ShardCommit
from kinesis_batch.storage.staged import StagedFile

ARRIVED = datetime(2026, 11, 22, tzinfo=UTC)  # when the staged rows arrived in Kinesis

#: (format, where): every sink the suite proves the contract on.
KINDS = [
    ("parquet", "local"),
    ("delta", "local"),
    ("delta", "s3"),
    ("iceberg", "local"),
    ("iceberg", "s3"),
    ("iceberg", "glue"),  # AWS Glue as the catalog (moto), the warehouse on S3
]
KIND_IDS = [f"{format}-{where}" for format, where in KINDS]


def make_bucket() -> str:
    import boto3

    name = f"kb-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


def output_args(format: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """The --output (and --format, --catalog) of a fresh output of this kind. Iceberg catalogs
    are configured the way pyiceberg users do it, in PYICEBERG_CATALOG__* variables."""
    name = uuid.uuid4().hex[:8]
    if format == "parquet":
        return ("--format", "parquet", "--output", str(tmp_path / f"out-{name}"))
    if format == "delta":
        root = f"s3://{make_bucket()}/tables/t{name}" if where == "s3" else str(tmp_path / f"delta-{name}")
        return ("--format", "delta", "--output", root)
    catalog = f"c{name}"
    warehouse = f"file://{tmp_path}/warehouse-{name}" if where == "local" else f"s3://{make_bucket()}/warehouse"
    settings = {"TYPE": "sql", "URI": f"sqlite:///{tmp_path}/catalog-{name}.db", "WAREHOUSE": warehouse}
    if where == "glue":  # its endpoint comes from AWS_ENDPOINT_URL_GLUE, like the other services'
        settings = {"TYPE": "glue", "WAREHOUSE": warehouse}
    for key, value in settings.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{catalog.upper()}__{key}", value)
    return ("--format", "iceberg", "--output", f"lake.t{name}", "--catalog", catalog)


def run_config(stream: str, output: tuple[str, ...], worker_id: str, **settings: Any) -> RunConfig:
    """What ``kinesis-batch run --stream STREAM OUTPUT... --worker-id WORKER_ID`` runs with
    (``output``: output_args' arguments; ``settings``: RunConfig's others)."""
    options = dict(zip(output[::2], output[1::2], strict=True))
    return RunConfig.of(
        stream=stream,
        output=options["--output"],
        format=options["--format"],
        catalog=options.get("--catalog"),
        worker_id=worker_id,
        **settings,
    )


def sink_of(args: tuple[str, ...], *, app: str = "kinesis-batch-tests", stream: str = "s") -> Stored:
    options = dict(zip(args[::2], args[1::2], strict=True))
    return open_sink(
        options["--format"],
        options["--output"],
        app=app,
        stream=stream,
        catalog=options.get("--catalog"),
        s3=s3_settings(),
    )


def read_rows(sink: Sink) -> dict[str, list[Any]]:
    """Every committed row, as the format's own reader returns it (empty before the first batch)."""
    table = _read(sink)
    return {} if table is None or table.num_rows == 0 else table.to_pydict()


def _read(sink: Sink) -> pa.Table | None:
    if sink.format == "parquet":
        root = Path(sink.uri)
        if not root.exists():
            return None
        found = ds.dataset(root, format="parquet", partitioning="hive")
        # Every file's columns, as readers that merge schemas see them (new files carry new ones).
        schemas = [fragment.physical_schema for fragment in found.get_fragments()]
        if not schemas:
            return found.to_table()
        partitions = [field for field in found.schema if field.name not in pa.unify_schemas(schemas).names]
        unified = pa.unify_schemas([*schemas, pa.schema(partitions)])
        return ds.dataset(root, format="parquet", partitioning="hive", schema=unified).to_table()
    if sink.format == "delta":
        from deltalake import DeltaTable

        from kinesis_batch.storage.place import Place

        place = Place(sink.uri, s3_settings())
        options = place.s3.object_store_options() if place.on_s3 else None
        return DeltaTable(sink.uri, storage_options=options).to_pyarrow_table()
    catalog = sink.catalog  # type: ignore[attr-defined]
    return catalog.load_table(sink.identifier).scan().to_arrow()  # type: ignore[attr-defined]


def commit_record(batch_id: str, shards: tuple[str, ...] = ("shardId-0", "shardId-1")) -> CommitRecord:
    return CommitRecord(
        batch_id=batch_id,
        run_id=f"run-{batch_id}",
        stream="s",
        created_at=datetime.now(UTC),
        shards=tuple(
            ShardCommit(shard, Checkpoint.trim_horizon(), Checkpoint.at(str(10**55 + i)), 3, False)
            for i, shard in enumerate(shards)
        ),
    )


def stage(sink: Sink, record: CommitRecord, rows: int = 3, *, arrival: datetime = ARRIVED) -> list[StagedFile]:
    """Write each shard of ``record`` as one Spark task would, into the sink's data place and
    layout (its partitions' hive folders): ``rows`` rows a shard, arrived at ``arrival``."""
    from kinesis_batch.spark.files import TaskFiles

    files: list[StagedFile] = []
    schema = ROW_SCHEMA if sink.format == "parquet" else RAW.schema(batch_column=True)
    data = sink.data(record.batch_id)
    data.make_dirs()
    for shard in record.shards:
        columns: dict[str, list[Any]] = {
            "shard_id": [shard.shard_id] * rows,
            "sequence_number": [str(10**55 + i) for i in range(rows)],
            "sub_sequence_number": [0] * rows,
            "partition_key": ["k"] * rows,
            "data": [f"{record.batch_id}/{shard.shard_id}/{i}".encode() for i in range(rows)],
            "approximate_arrival_timestamp": [arrival] * rows,
            "lineage_depth": [0] * rows,
        }
        if sink.format != "parquet":
            columns["batch_id"] = [record.batch_id] * rows
        with TaskFiles(data, shard.shard_id, sink.table_sink().file_layout(128 << 20)) as task:
            task.write(pa.RecordBatch.from_pydict(columns, schema=schema))
        files += task.files
    sink.write_manifest(record.batch_id, {"batch": record.batch_id})
    return files


def race(publisher: Sink, discarder: Sink, record: CommitRecord, files: list[StagedFile]) -> dict[str, object]:
    """Publish and discard one batch at the same moment from two threads: ``published`` and
    ``discarded`` as each returned (a fenced publish: False), or what either raised instead."""
    outcome: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def publish() -> None:
        barrier.wait()
        try:
            outcome["published"] = publisher.publish(record, files)
        except LeaseLostError:
            outcome["published"] = False
        except Exception as exc:
            outcome["publish failed"] = exc

    def discard() -> None:
        barrier.wait()
        try:
            outcome["discarded"] = discarder.discard(record.batch_id)
        except Exception as exc:
            outcome["discard failed"] = exc

    threads = [threading.Thread(target=publish), threading.Thread(target=discard)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcome
