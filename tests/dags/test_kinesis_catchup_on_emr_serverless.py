"""The catch-up DAG with ``emr_serverless`` set: as on Amazon MWAA, the worker has no Spark of its
own; the read step is a job run on the EMR Serverless stand-in (tools/devkit/emr_serverless.py)
while the task renews the leases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.output.support import make_bucket, read_rows, sink_of
from tests.runs import assert_exactly_once, assert_per_key_order, diamond_stream
from tests.serverless.standin import ROLE, StandIn
from tests.streams import StreamFactory

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
