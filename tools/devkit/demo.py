"""The README's first command: the main job the way users run it, on the embedded defaults.

Starts moto_server (DynamoDB) and kinesalite (Kinesis) on free loopback ports, a SQLite Airflow
in a temporary AIRFLOW_HOME whose ``aws_default`` connection points at them and whose
``[kinesis_batch]`` section names the stream and the output, as a team configures its own; and
creates a stream with a split and a merge in its history. Then runs the ``kinesis_catchup`` DAG
(``dag.test()``, the engine of ``airflow dags test``) on local Spark, prints ``kinesis-batch
status`` and where the Parquet went (read back with pyarrow), runs the DAG again to show that
only new data is read, maintains the output (``kinesis-batch maintain``: its small files
compacted) and shows its files in ``status --output``, and stops the servers.

What the processes under it say on their own stderr (Java's notice of the incubator module
Spark 4 loads, Airflow's own warnings) goes to a log file in the demo's folder, which the demo
names, and whose end it prints if a run fails.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from devkit.stack import local_stack, migrate_airflow_db, wait_active
from kinesis_batch import cli
from kinesis_batch.aws import kinesis_client
from kinesis_batch.shards.listing import list_shards

STREAM = "demo-clicks"
DAGS = Path(__file__).resolve().parents[2] / "dags"  # the checkout's: the devkit is never installed
# The DAG reads up to its data interval end. kinesalite stamps records of child shards a few
# hundred ms in the future, so the demo's runs have an interval ending a minute ahead.
AHEAD = timedelta(minutes=1)


def main() -> int:
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="kinesis-batch-demo-"))
    output = Path(os.environ.get("KINESIS_BATCH_DEMO_OUTPUT") or workdir / "output")
    log = workdir / "processes.log"
    with local_stack(("kinesalite",), log_dir=workdir) as stack, _stderr_to(log):
        os.environ.update(stack.env("kinesalite"))
        airflow_settings = stack.airflow_env(workdir / "airflow", DAGS)
        airflow_settings |= {
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",  # the console shows task states
            "AIRFLOW__KINESIS_BATCH__STREAM": STREAM,  # [kinesis_batch] stream: what kinesis_catchup reads
            "AIRFLOW__KINESIS_BATCH__OUTPUT": str(output),  # [kinesis_batch] output: its Asset
        }
        os.environ.update(airflow_settings)  # before airflow is imported: it reads them once
        print(f"local endpoints: DynamoDB {stack.dynamodb.url}, Kinesis {stack.kinesis['kinesalite'].url}")
        print(f"Airflow: SQLite in {workdir / 'airflow'}, DAGs from {DAGS}, aws_default -> the local endpoints")
        print(f"[kinesis_batch] stream = {STREAM}, output = {output}; the processes' own logs: {log}")
        migrate_airflow_db(airflow_settings)
        kinesis = kinesis_client()
        sent = _seed_stream(kinesis)
        print(f"stream {STREAM}: {sent} records; 3 shards, then a split and a merge\n")

        dag = _catchup_dag()
        if not _run_dag(dag, datetime.now(UTC) + AHEAD, log):
            return 1
        print(f"\n$ kinesis-batch status --stream {STREAM}")
        cli.main(["status", "--stream", STREAM])

        more = _put(kinesis, sent, 1000)
        print(f"\n{more} more records arrive; the next hourly run:")
        if not _run_dag(dag, datetime.now(UTC) + 2 * AHEAD, log):
            return 1

        print(f"\nthe nightly maintenance (the kinesis_maintain DAG's):\n$ kinesis-batch maintain --output {output}")
        cli.main(["maintain", "--output", str(output)])
        print(f"\n$ kinesis-batch status --stream {STREAM} --output {output}  (its last lines)")
        with contextlib.redirect_stdout(io.StringIO()) as status:
            cli.main(["status", "--stream", STREAM, "--output", str(output)])
        print("\n".join(status.getvalue().splitlines()[-2:]))

        counts = _read_back(output)
        duplicates = sum(n - 1 for n in counts.values() if n > 1)
        print(f"\noutput: {output} ({len(list(output.glob('batch_id=*')))} batches of Parquet)")
        rows = sum(counts.values())
        print(f"read back with pyarrow: {rows} rows for {sent + more} records put, {duplicates} duplicates")
        print(f"demo done in {time.monotonic() - started:.1f} s; servers stopped")
        return 0 if rows == sent + more and duplicates == 0 else 1


@contextlib.contextmanager
def _stderr_to(log: Path) -> Iterator[None]:
    """File descriptor 2 of this process, and so of the JVM and servers it starts, into ``log``."""
    sys.stderr.flush()
    saved = os.dup(2)
    with log.open("ab") as file:
        os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _catchup_dag() -> Any:
    from airflow.dag_processing.dagbag import DagBag

    # dag.test() runs Airflow's execution API in this process through Starlette's test client,
    # which warns about its own HTTP client: the demo's doing, not a user's.
    warnings.filterwarnings("ignore", message=r"Using `httpx` with `starlette.testclient` is deprecated")
    bag = DagBag(dag_folder=str(DAGS))
    if bag.import_errors:
        raise SystemExit(f"DAG import errors: {bag.import_errors}")
    return bag.get_dag("kinesis_catchup")


def _run_dag(dag: Any, logical_date: datetime, log: Path) -> bool:
    """One run of the DAG as its schedule would start it; prints each task's state (and, when
    the run failed, the end of the processes' log)."""
    when = f"{logical_date:%Y-%m-%dT%H:%M:%S}"
    print(f"$ airflow dags test kinesis_catchup {when}", flush=True)
    took = time.monotonic()
    dag_run = dag.test(logical_date=logical_date)
    states = {ti.task_id: ti.state for ti in dag_run.get_task_instances()}
    for task in dag.topological_sort():
        print(f"  {task.task_id:<20} {states.get(task.task_id)}")
    print(f"  DAG run {dag_run.run_id}: {dag_run.state} in {time.monotonic() - took:.1f} s")
    output = Path(os.environ["AIRFLOW__KINESIS_BATCH__OUTPUT"])
    newest = max(output.glob("batch_id=*"), key=lambda batch: batch.stat().st_mtime, default=None)
    if newest is not None:
        print(f"  newest batch: {newest} ({_rows(newest)} rows)")
    if str(dag_run.state) != "success":
        print(f"the run failed; the end of {log}:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))
        return False
    return True


def _seed_stream(kinesis) -> int:  # type: ignore[no-untyped-def]
    kinesis.create_stream(StreamName=STREAM, ShardCount=3)
    wait_active(kinesis, STREAM)
    count = _put(kinesis, 0, 3000)
    first, second, third = sorted(list_shards(kinesis, STREAM), key=lambda s: s.starting_hash_key)
    middle = (first.starting_hash_key + first.ending_hash_key + 1) // 2
    kinesis.split_shard(StreamName=STREAM, ShardToSplit=first.shard_id, NewStartingHashKey=str(middle))
    wait_active(kinesis, STREAM)
    kinesis.merge_shards(StreamName=STREAM, ShardToMerge=second.shard_id, AdjacentShardToMerge=third.shard_id)
    wait_active(kinesis, STREAM)
    return count + _put(kinesis, count, 3000)


def _put(kinesis, start: int, count: int) -> int:  # type: ignore[no-untyped-def]
    for first in range(start, start + count, 500):
        batch = [{"Data": f"event-{i}".encode(), "PartitionKey": f"user-{i % 97}"} for i in range(first, first + 500)]
        kinesis.put_records(StreamName=STREAM, Records=batch)
    return count


def _rows(batch: Path) -> int:
    import pyarrow.dataset as ds

    return int(ds.dataset(batch, format="parquet").count_rows())


def _read_back(output: Path) -> Counter[bytes]:
    import pyarrow.dataset as ds

    table = ds.dataset(output, format="parquet", partitioning="hive").to_table(columns=["data"])
    return Counter(table.column("data").to_pylist())


if __name__ == "__main__":
    sys.exit(main())
