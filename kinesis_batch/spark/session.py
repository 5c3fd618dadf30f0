"""The embedded Spark: a local SparkSession that starts as fast as a JVM can, or a remote one.

A run's read is one job of Python tasks (kinesis_batch.spark.job). On a cluster,
spark-submit configures the session (kinesis_batch.cli.submit); a Spark Connect server is
reached by its URL (``SPARK_REMOTE``, ``--spark-remote``: kinesis_batch.spark.engine.remote; which one a
run uses is kinesis_batch.spark.place's to decide).
Everything else here is for ``local[...]`` masters, where the JVM only schedules the Python
tasks and passes their small results back:
- the client compiler and the serial collector start it about 2 s sooner and cost nothing;
- Spark logs errors only (``log4j2.properties``) in a context started here: its default
  profile's start-up notices would come before every run's own lines;
- a class-data archive of the classes a run loads (Java's AppCDS) maps them from one file
  instead of loading and verifying thousands of classes from Spark's jars: about 4 s less to
  start, and 3 s less for the first job.
  ``python -m kinesis_batch.spark.session --class-archive`` makes it (tools/bootstrap.sh does,
  into the virtual environment); without it a context starts as before. An archive of another
  Java or Spark is refused by the JVM, silently, and the context starts without it;
- the Python workers are forked by kinesis_batch.spark.daemon, which imports pyspark and the
  task code once, compiled, before it forks.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from kinesis_batch import defaults

if TYPE_CHECKING:
    from kinesis_batch.spark.engine import Engine

#: Where the class-data archive is looked for: KINESIS_BATCH_SPARK_ARCHIVE, else in the
#: environment Python runs from (it belongs to that environment's pyspark).
ARCHIVE_SETTING = "KINESIS_BATCH_SPARK_ARCHIVE"
#: Spark's own setting of a Spark Connect server (what pyspark's builder reads too).
REMOTE_SETTING = "SPARK_REMOTE"
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Errors only, for the context a process starts for itself: Spark's default profile would print
#: its start-up notices before every run's own lines. A spark-submitted step keeps Spark's own
#: logging, which goes to the orchestrator's log with the step's output.
QUIET_LOGS = f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties')}"
# A refused archive would print a warning on stdout (the run's --json report goes there).
QUIET_CDS = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def class_archive() -> Path:
    return Path(os.environ.get(ARCHIVE_SETTING) or Path(sys.prefix) / "share" / "kinesis-batch" / "spark.jsa")


def local_jvm_options(archive: Path | None = None, *, dump: bool = False) -> str:
    """The driver JVM's options for a local master: with ``archive`` if it exists, or writing
    it at the JVM's exit (``dump``)."""
    archive = archive or class_archive()
    if dump:
        return f"{LOCAL_JVM_OPTIONS} -XX:ArchiveClassesAtExit={archive} {QUIET_CDS}"
    if archive.is_file():
        return f"{LOCAL_JVM_OPTIONS} -XX:SharedArchiveFile={archive} {QUIET_CDS}"
    return LOCAL_JVM_OPTIONS


def spark_session(
    master: str = defaults.SPARK_MASTER, app_name: str = "kinesis-batch", *, jvm_options: str | None = None
) -> Engine:
    """The embedded default: a local session (or the one already running in this process)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Workers must run this interpreter (its packages), not whatever python3 is first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from kinesis_batch.spark import converters
    from kinesis_batch.spark.engine import classic

    converters.lighten()  # before the context's first JVM call
    conf = SparkConf().setAppName(app_name).setMaster(master)
    for key, value in {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # its bars would interleave with our progress lines
        "spark.speculation": "false",  # a speculative duplicate would read the shard twice
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }.items():
        conf.set(key, value)
    if master.startswith("local"):
        conf.set("spark.driver.extraJavaOptions", f"{jvm_options or local_jvm_options()} {QUIET_LOGS}")
        conf.set("spark.python.daemon.module", "kinesis_batch.spark.daemon")  # workers that start cheaply
    with _own_sigint_handler():
        context = SparkContext.getOrCreate(conf)
    # A failed task is reported by the run itself, as one line with the task's own error; Spark's
    # ERROR log of it would print the same failure again as a JVM stack trace.
    context.setLogLevel("FATAL")
    return classic(SparkSession(context))


@contextmanager
def _own_sigint_handler() -> Iterator[None]:
    """Keep the process's SIGINT handler: pyspark's (installed as a context starts) would raise
    KeyboardInterrupt through whatever runs, past the caller's clean stop (kinesis_batch.stopping)
    or an orchestrator's own handling of the signal."""
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if in_main else None
    try:
        yield
    finally:
        if in_main and previous is not None:
            signal.signal(signal.SIGINT, previous)


def make_class_archive(archive: Path) -> float:
    """Start a local session that loads what a run loads, and have its JVM write ``archive`` as
    it exits (to a temporary name first: a half-written archive is never picked up). Returns
    the seconds it took."""
    from pyspark import SparkContext

    from kinesis_batch.spark.job import warm_up

    started = time.monotonic()
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f".{archive.name}.{os.getpid()}")
    engine = spark_session("local[1]", "kinesis-batch-class-archive", jvm_options=local_jvm_options(partial, dump=True))
    warm_up(engine)  # the classes of a job of Python tasks
    tag = "kinesis-batch-class-archive"
    with engine.jobs.tagged(tag):  # and of a tagged job of a read's form, and of the status tracker's calls
        engine.jobs.each(["a", "b"], _row)
    engine.jobs.failed_attempts(tag)
    gateway = SparkContext._gateway
    engine.session.sparkContext.stop()
    process = getattr(gateway, "proc", None)
    if gateway is None or process is None:
        raise RuntimeError("pyspark did not start its own JVM (a JVM started elsewhere cannot write the archive)")
    gateway.shutdown()
    process.stdin.close()  # the JVM ends when its standard input does
    process.wait(timeout=120)
    partial.replace(archive)
    return time.monotonic() - started


def _row(item: str) -> Iterator[tuple[str, str]]:
    yield item, item


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The embedded Spark's class-data archive")
    parser.add_argument("--class-archive", action="store_true", help=f"write it to {class_archive()}")
    args = parser.parse_args(argv)
    if args.class_archive:
        seconds = make_class_archive(class_archive())
        print(f"Spark class-data archive: {class_archive()} ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
