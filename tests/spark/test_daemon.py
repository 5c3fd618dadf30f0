"""A local context's Python workers are forked by kinesis_batch.spark.daemon: they run pyspark
from this environment's compiled files, not from the zip Spark puts first on their path, with
the task code (and pandas, which pyarrow imports on its first conversion) already imported."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from kinesis_batch.spark.daemon import installed_first

pytestmark = pytest.mark.contract(
    "spark", why="our worker daemon stands in for pyspark's: its protocol is this PySpark's"
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            ["/spark/pyspark.zip", "/spark/py4j-src.zip", "/venv/site"],
            ["/venv/site", "/spark/pyspark.zip", "/spark/py4j-src.zip"],
        ),
        (["", "/venv/site"], ["", "/venv/site"]),
        (["/a.zip", "/b", "/c.zip", "/d"], ["/b", "/d", "/a.zip", "/c.zip"]),
    ],
)
def test_the_zip_archives_go_after_everything_else_in_their_order(path: list[str], expected: list[str]) -> None:
    assert installed_first(path) == expected


def _where_the_worker_found_its_modules(_: Any) -> tuple[str, bool, bool]:
    import sys

    import pyspark

    return pyspark.__file__ or "", "kinesis_batch.spark.task" in sys.modules, "pandas" in sys.modules


def test_a_local_contexts_workers_import_pyspark_compiled_and_the_task_code_before_any_task(spark: Any) -> None:
    found = spark.session.sparkContext.parallelize([0, 1], 2).map(_where_the_worker_found_its_modules).collect()
    # pandas: what pyarrow imports on a worker's first conversion of Python values, where it is
    # installed (no extra of ours installs it: make test-compat's spark-3.5 environments lack it)
    installed = importlib.util.find_spec("pandas") is not None
    assert all(".zip" not in where and task and pandas is installed for where, task, pandas in found), found
