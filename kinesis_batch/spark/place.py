"""Where a run's read step runs, decided once, from the stream's settings and what the adapter
brings: one value every adapter builds the same way and every step reads.

=========  ========================================================  ==============================
where      chosen when                                               the read step
=========  ========================================================  ==============================
job run    the stream's ``emr_serverless`` settings                  an EMR Serverless job run
                                                                     (kinesis_batch.run.job_run)
submit     the adapter brings a cluster: Airflow's ``spark_conn_id``  spark-submitted, client mode
           param, Dagster's ``spark.submit``                          (kinesis_batch.spark.cluster)
connect    ``spark_remote``, else ``SPARK_REMOTE`` unless the master  a Spark Connect session,
           was named for this run                                    connected before any lease
local      otherwise                                                 a session on ``spark_master``
                                                                     in this process, started on
                                                                     first use
=========  ========================================================  ==============================

Two places named at once are one line (IllegalArgumentError), never a silent choice: the
settings refuse ``emr_serverless`` beside ``spark_remote`` or a master
(kinesis_batch.settings), and :meth:`ReadPlace.of` a cluster beside ``emr_serverless``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kinesis_batch import defaults
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.spark.cluster import SparkCluster
from kinesis_batch.spark.session import REMOTE_SETTING, spark_session

if TYPE_CHECKING:
    from kinesis_batch.spark.engine import Engine

LOCAL, CONNECT, SUBMIT, JOB_RUN = "local", "connect", "submit", "job run"


@dataclass(frozen=True)
class ReadPlace:
    """``where``: one of :data:`LOCAL`, :data:`CONNECT`, :data:`SUBMIT`, :data:`JOB_RUN`;
    ``master``: a local session's (or the cluster's); ``remote``: the Spark Connect URL;
    ``cluster``: what a submit is sent to."""

    where: str
    master: str = defaults.SPARK_MASTER
    remote: str = ""
    cluster: SparkCluster | None = None

    @classmethod
    def of(
        cls, config: RunConfig, *, cluster: SparkCluster | None = None, environ: Mapping[str, str] | None = None
    ) -> ReadPlace:
        """The place ``config``'s settings and the adapter's ``cluster`` (None: it brings none)
        say; ``environ``: where ``SPARK_REMOTE`` is looked up (default: this process's)."""
        settings = config.settings
        if settings.emr_serverless is not None:
            if cluster is not None:
                raise IllegalArgumentError(
                    f"a cluster to spark-submit to ({cluster.master}) and emr_serverless both say where the read "
                    "runs: choose one"
                )
            return cls(JOB_RUN)
        if cluster is not None:
            return cls(SUBMIT, cluster.master, cluster=cluster)
        explicit_master = settings.spark_master != defaults.SPARK_MASTER  # said for this run: the environment yields
        found = os.environ if environ is None else environ
        url = settings.spark_remote or ("" if explicit_master else found.get(REMOTE_SETTING, ""))
        if url:
            return cls(CONNECT, remote=url)
        return cls(LOCAL, settings.spark_master)

    @property
    def job_run(self) -> bool:
        """The read is an EMR Serverless job run: the run's start checks its application first."""
        return self.where == JOB_RUN

    def engine(self) -> Callable[[], Engine]:
        """The Spark session of this process's steps: a Spark Connect session connected now, so
        a server that does not answer is one line before the run takes a lease; else a session
        on ``master`` started on first use (a run that reads elsewhere, or plans only, never
        starts a JVM)."""
        if self.where == CONNECT:
            from kinesis_batch.spark.engine import remote

            session = remote(self.remote)
            return lambda: session
        master = self.master if self.where == LOCAL else defaults.SPARK_MASTER
        engine: list[Engine] = []
        starting = threading.Lock()  # a group's runs may ask for it side by side: one session

        def get() -> Engine:
            with starting:
                if not engine:
                    engine.append(spark_session(master))
            return engine[0]

        return get


__all__ = ["CONNECT", "JOB_RUN", "LOCAL", "SUBMIT", "ReadPlace"]
