"""The Python daemon of a local Spark (``spark.python.daemon.module``): Spark's own, pyspark.daemon,
started so that the workers it forks start cheaply.

Spark puts its pyspark.zip first on the daemon's path. A zip archive holds no compiled bytecode,
so each daemon compiled pyspark's modules from source, and each worker it forked then imported
pyspark.worker and this package's task code again: over a second of CPU for every context a run
or a test starts (py-spy over the test suite: a third of the Spark workers' CPU was imports).
Here the daemon imports them once, from this environment's compiled files, before it forks: the
workers inherit them. pandas too, where it is installed: pyarrow then imports it on its first
conversion of Python values, and each worker's first page paid 0.2 s for it. No extra of ours
installs pandas (the read needs none), so an environment without it just skips that.

Only for local masters, whose workers run this environment's Python and so its own pyspark, the
same version as the zip. A cluster's executors run their own Python with Spark's zip.
"""

from __future__ import annotations

import importlib.util
import sys


def installed_first(path: list[str]) -> list[str]:
    """``path`` with its zip archives (Spark's pyspark and py4j) after everything else."""
    archives = [entry for entry in path if entry.endswith(".zip")]
    return [entry for entry in path if entry not in archives] + archives


def main() -> None:
    sys.path[:] = installed_first(sys.path)
    # Each forked worker's first import, and what each task's function unpickles into.
    if importlib.util.find_spec("pandas") is not None:
        import pandas  # type: ignore[import-untyped]  # noqa: F401
    import pyspark.daemon
    import pyspark.worker

    import kinesis_batch.spark.task  # noqa: F401

    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
