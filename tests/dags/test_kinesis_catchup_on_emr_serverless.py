"""The catch-up DAG with ``emr_serverless`` set: as on Amazon MWAA, the worker has no Spark of its
own; the read step is a job run on the EMR Serverless stand-in (tools/devkit/emr_serverless.py)
while the task renews the leases."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseStore
from kinesis_batch.aws import dynamodb_client
from kinesis_batch.parsers import default_table
from tests.output.support import make_bucket, read_rows, sink_of
from tests.runs import assert_exactly_once, assert_per_key_order, diamond_stream
from tests.serverless.standin import ROLE, StandIn
from tests.streams import StreamFactory, put_kib

AHEAD = timedelta(minutes=1)  # see test_kinesis_catchup.py: kinesalite stamps child shards ahead


@pytest.mark.timeout(600)
def test_the_catch_up_dag_reads_a_resharded_stream_into_delta_through_a_job_run_exactly_once(
    dagbag: Any, emr_serverless: StandIn, kinesis: Any, streams: StreamFactory, tmp_path: Path
) -> None:
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 30)
    output = f"s3://{make_bucket()}/tables/{name}"
    application = emr_serverless.application()
    job = {"application_id": application, "execution_role_arn": ROLE, "environment": emr_serverless.environment()}
    conf = {"stream": name, "format": "delta", "output": output, "read_limits": "none", "emr_serverless": job}

    dag_run = dagbag.get_dag("kinesis_catchup").test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)

    assert dag_run.state == "success", [(ti.task_id, ti.state) for ti in dag_run.get_task_instances()]
    rows = read_rows(sink_of(("--format", "delta", "--output", output), app=f"kinesis-batch-{name}", stream=name))
    assert_exactly_once(rows, sent)
    assert_per_key_order(rows)
    (run,) = emr_serverless.job_runs(application)
    assert run["state"] == "SUCCESS"
    assert run["name"].startswith(f"kinesis-batch/kinesis-batch-{name}/kinesis_catchup-")


@pytest.mark.timeout(600)
def test_a_task_killed_while_its_job_run_reads_cancels_the_job_run_and_leaves_no_lease_held(
    dagbag: Any, emr_serverless: StandIn, kinesis: Any, streams: StreamFactory
) -> None:
    """Airflow stops a task with SIGTERM to its process, whose handler calls ``on_kill``: here sent
    by a thread of this process (which runs the dag.test() task) once the job run is RUNNING."""
    from tests.faultpoints import forget_signals

    name = streams.create(shards=1)
    put_kib(kinesis, name, 60)  # 60 s at 1 KiB/s: still reading when the task is killed
    output = f"s3://{make_bucket()}/tables/{name}"
    application = emr_serverless.application()
    job = {"application_id": application, "execution_role_arn": ROLE, "environment": emr_serverless.environment()}
    conf = {"stream": name, "format": "delta", "output": output, "read_limits": "5,1024", "emr_serverless": job}

    def kill_once_running() -> None:
        while not any(run["state"] == "RUNNING" for run in emr_serverless.job_runs(application)):
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)

    forget_signals(os.getpid())
    killer = threading.Thread(target=kill_once_running, daemon=True)
    killer.start()
    try:
        killed = dagbag.get_dag("kinesis_catchup").test(logical_date=datetime.now(UTC) + AHEAD, run_conf=conf)
    finally:
        killer.join(timeout=120)
        forget_signals(os.getpid())

    states = {ti.task_id: ti.state for ti in killed.get_task_instances()}
    assert states["run_spark_job"] == "failed" and states["publish"] == "upstream_failed", states
    (run,) = emr_serverless.job_runs(application)
    assert run["state"] == "CANCELLED"
    leases = LeaseStore(dynamodb_client(), default_table(name)).list_leases()
    assert [lease.lease_key for lease in leases if lease.lease_owner or lease.pending_batch_id] == []
    assert read_rows(sink_of(("--format", "delta", "--output", output), app=default_table(name), stream=name)) == {}
