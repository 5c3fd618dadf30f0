"""Where the read step runs is decided once (kinesis_batch.spark.place), from the stream's
settings and the adapter's cluster: a table of cases, each naming a place, and the mistakes of
naming two places at once, each one line."""

from __future__ import annotations

from typing import Any

import pytest

from kinesis_batch import defaults
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import IllegalArgumentError, InvalidStateError
from kinesis_batch.serverless.settings import ServerlessSettings
from kinesis_batch.spark.cluster import SparkCluster
from kinesis_batch.spark.place import CONNECT, JOB_RUN, LOCAL, SUBMIT, ReadPlace
from kinesis_batch.spark.session import REMOTE_SETTING

JOB = ServerlessSettings.of(
    {
        "application_id": "00abc123",
        "execution_role_arn": "arn:aws:iam::123456789012:role/reader",
        "environment": "s3://b/kinesis-batch.tar.gz",
    }
)
CLUSTER = SparkCluster("spark://master:7077")
SERVER = "sc://127.0.0.1:15002"


def config(**settings: Any) -> RunConfig:
    return RunConfig.of(stream="s", output="/tmp/out", **settings)


CASES = [
    # (the settings, the adapter's cluster, SPARK_REMOTE, what is decided)
    ({}, None, None, ReadPlace(LOCAL, defaults.SPARK_MASTER)),
    ({"spark_master": "local[2]"}, None, None, ReadPlace(LOCAL, "local[2]")),
    ({}, None, SERVER, ReadPlace(CONNECT, remote=SERVER)),
    ({"spark_master": "local[2]"}, None, SERVER, ReadPlace(LOCAL, "local[2]")),  # a master said for the run wins
    ({"spark_remote": "sc://elsewhere:15002"}, None, SERVER, ReadPlace(CONNECT, remote="sc://elsewhere:15002")),
    ({}, CLUSTER, SERVER, ReadPlace(SUBMIT, CLUSTER.master, cluster=CLUSTER)),  # the adapter's cluster
    ({"emr_serverless": JOB}, None, SERVER, ReadPlace(JOB_RUN)),
]


@pytest.mark.parametrize(("settings", "cluster", "remote", "decided"), CASES)
def test_the_place_of_the_read_is_decided_once_from_the_settings_and_the_adapter(
    settings: dict[str, Any], cluster: SparkCluster | None, remote: str | None, decided: ReadPlace
) -> None:
    environ = {REMOTE_SETTING: remote} if remote else {}
    place = ReadPlace.of(config(**settings), cluster=cluster, environ=environ)
    assert place == decided
    assert place.job_run is (decided.where == JOB_RUN)


def test_a_cluster_beside_a_job_run_is_one_line() -> None:
    with pytest.raises(IllegalArgumentError, match=r"spark://master:7077\) and emr_serverless .*choose one"):
        ReadPlace.of(config(emr_serverless=JOB), cluster=CLUSTER)


@pytest.mark.parametrize("other", [{"spark_remote": SERVER}, {"spark_master": "local[2]"}])
def test_the_settings_refuse_a_job_run_beside_another_place(other: dict[str, str]) -> None:
    with pytest.raises(IllegalArgumentError, match="both say where the read runs: choose one"):
        config(emr_serverless=JOB, **other)


def test_a_local_place_starts_no_spark_until_asked_and_a_connect_place_connects_now() -> None:
    ReadPlace(LOCAL, "local[2]").engine()  # started on first use: nothing happens now
    ReadPlace(JOB_RUN).engine()  # reads elsewhere: its steps never start a JVM
    with pytest.raises(InvalidStateError, match=r"sc://127\.0\.0\.1:9"):  # does not answer, or no client
        ReadPlace(CONNECT, remote="sc://127.0.0.1:9").engine()
