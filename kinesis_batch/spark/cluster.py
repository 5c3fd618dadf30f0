"""A run's read step on a Spark cluster, through spark-submit.

The other steps of a run (leases, publish, commit) stay with the orchestrator (an Airflow task,
a Dagster step); only the read step goes to the cluster, as a spark-submit of
``kinesis_batch/cli/read_step.py`` in client mode with the run's configuration and id as JSON,
so it reads the leases the run took and writes into the run's staging. The
submitting process renews those leases meanwhile (CatchUpRun.read_elsewhere) and kills the
submit when one is lost; the submitted step never writes a lease (its renewal would fence the
submitting process out). The package itself travels as a zip in ``--py-files``:
executors need only its dependencies (boto3, aws-kinesis-agg, pyarrow), not the package.

Credentials: the spark-submit driver gets the run's AWS settings in its environment; executors
use their own (an instance profile on EMR, IRSA on Kubernetes); endpoints and region travel in
each task's spec.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinesis_batch.config import RunConfig
from kinesis_batch.environment import READ_STEP
from kinesis_batch.errors import (
    BAD_STATE,
    LEASE_LOST,
    NOTHING_PUBLISHED,
    DependencyError,
    IllegalArgumentError,
    InvalidStateError,
    from_exit_code,
)
from kinesis_batch.read_spec import ReadStepSpec
from kinesis_batch.serverless.attempt import JobResult
from kinesis_batch.spark.session import local_jvm_options
from kinesis_batch.storage.place import Place

DRIVER_JVM_OPTIONS = "spark.driver.extraJavaOptions"
_SCHEMES = ("spark://", "yarn", "k8s://", "local", "mesos://")


@dataclass(frozen=True)
class SparkCluster:
    """Where and how to spark-submit: what an Airflow Spark connection says."""

    master: str
    binary: str = ""  # "" -> the installed pyspark's bin/spark-submit
    conf: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_connection(cls, host: str | None, port: int | None, extra: Mapping[str, Any]) -> SparkCluster:
        """From a Spark connection: host ``spark://master`` (or a bare host name, taken as a
        standalone master; or ``yarn``, ``k8s://...``), optional port, and extras
        ``spark-binary`` and ``conf`` (Spark settings). ``deploy-mode`` must be client: the read
        step reports back to the task through the run's staging, from a driver the task waits for."""
        if not host:
            raise IllegalArgumentError("the Spark connection has no host (e.g. spark://spark-master)")
        master = host if host.startswith(_SCHEMES) else f"spark://{host}"
        if port and master.startswith("spark://") and ":" not in master.removeprefix("spark://"):
            master = f"{master}:{port}"
        if extra.get("deploy-mode", "client") != "client":
            raise IllegalArgumentError(
                f"the Spark connection's deploy-mode must be client, not {extra['deploy-mode']!r}"
            )
        conf = extra.get("conf") or {}
        if not isinstance(conf, Mapping):
            raise IllegalArgumentError("the Spark connection's conf extra must be an object of Spark settings")
        return cls(
            master, str(extra.get("spark-binary") or ""), tuple(sorted((str(k), str(v)) for k, v in conf.items()))
        )

    def spark_submit(self) -> str:
        if self.binary:
            return self.binary
        spec = importlib.util.find_spec("pyspark")
        if spec is None or spec.origin is None:
            raise InvalidStateError(
                "spark-submit not found: install pyspark or set spark-binary on the Spark connection"
            )
        return str(Path(spec.origin).parent / "bin" / "spark-submit")


#: Where a submitted read step writes its result, beside its spec.
RESULT = "read-step-result.json"


def read_step_spec(config: RunConfig, run_id: str, directory: Path) -> Path:
    """The read step's one argument: a file with the run's configuration and id, and where the
    step writes its result (:data:`RESULT` beside it: the error it ended with, and its kind), as
    JSON."""
    spec = directory / "read-step.json"
    result = Place(str(directory / RESULT)).to_json()
    spec.write_text(ReadStepSpec(config.to_json(), run_id, attempt=run_id, result=result).to_json())
    return spec


def submit_command(cluster: SparkCluster, package: Path, run_args: list[str], name: str) -> list[str]:
    """The spark-submit of a read step. To a local master the driver JVM is the one local Spark
    starts (kinesis_batch.spark.session: about 4 s sooner), unless the connection sets its own."""
    command = [cluster.spark_submit(), "--master", cluster.master, "--deploy-mode", "client", "--name", name]
    conf = [("spark.speculation", "false"), *cluster.conf]  # a speculative copy would read twice
    if cluster.master.startswith("local") and DRIVER_JVM_OPTIONS not in dict(cluster.conf):
        conf.append((DRIVER_JVM_OPTIONS, local_jvm_options()))
    for key, value in conf:
        command += ["--conf", f"{key}={value}"]
    return [*command, "--py-files", str(package), str(READ_STEP), *run_args]


def package_zip(directory: Path) -> Path:
    """The kinesis_batch package as a zip for ``--py-files`` (its Python files only)."""
    source = Path(__file__).resolve().parents[1]  # the kinesis_batch package
    target = directory / "kinesis_batch.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*")):
            if path.suffix in (".py", ".html") and "__pycache__" not in path.parts:
                archive.write(path, Path("kinesis_batch") / path.relative_to(source))
    return target


def _exited(code: int) -> str:
    """What a spark-submit that exited with ``code`` says (its own lines were passed on above)."""
    if code == LEASE_LOST.exit_code:
        return f"the Spark read step lost a lease; {NOTHING_PUBLISHED}"
    if code == BAD_STATE.exit_code:
        return "the Spark read step refused its input (see its output above)"
    return f"spark-submit exited with {code} (see its output above)"


class Submission:
    """One spark-submit of a read step, in a process group of its own, its output passed on line
    by line. ``run`` waits for it; ``cancel`` (from any thread: the lease renewer's) kills the
    whole group at once (spark-submit, its driver JVM and Python), and ``run`` then raises.

    The exit code becomes the error a task acts on: the one the read step wrote to ``result``
    (its line and kind, kinesis_batch.cli.read_step) when it wrote one, else 2 bad input or
    state and 3 a lost lease (no retry can help), anything else retryable. If the waiting task
    is stopped, the group is killed too.
    """

    def __init__(
        self,
        command: list[str],
        env: Mapping[str, str],
        progress: Callable[[str], None],
        result: Path | None = None,
    ) -> None:
        self.command = command
        self.env = dict(env)
        self.progress = progress
        self.result = result
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._cancelled = False

    def run(self) -> None:
        with self._lock:
            if self._cancelled:
                raise DependencyError("spark-submit was cancelled before it started")
            self._process = process = subprocess.Popen(
                self.command,
                env={**os.environ, **self.env},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                self.progress(line.rstrip())
            code = process.wait()
        finally:
            if process.poll() is None:
                _kill_group(process)
        if self._cancelled:
            raise DependencyError("spark-submit was cancelled")
        if code != 0:
            said = JobResult.read(Place(str(self.result))) if self.result is not None else None
            if said is not None and said.exit_code == code and said.error:
                raise from_exit_code(code, said.error, said.kind)
            raise from_exit_code(code, _exited(code))

    def running(self) -> bool:
        """Whether the spark-submit process is alive (started and not ended)."""
        with self._lock:
            return self._process is not None and self._process.poll() is None

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            process = self._process
        if process is not None and process.poll() is None:
            _kill_group(process)


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@contextlib.contextmanager
def submitted_read(
    cluster: SparkCluster, config: RunConfig, run_id: str, env: Mapping[str, str], progress: Callable[[str], None]
) -> Iterator[Submission]:
    """The read step of run ``run_id`` as a spark-submit to ``cluster``, the package zipped into
    a scratch folder that lives as long as the block. The caller runs it under its leases'
    renewal (CatchUpRun.read_elsewhere)."""
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-submit-") as scratch:
        package = package_zip(Path(scratch))
        spec = read_step_spec(config, run_id, Path(scratch))
        command = submit_command(cluster, package, [str(spec)], f"kinesis-batch-{run_id}")
        yield Submission(command, env, progress, result=spec.parent / RESULT)
