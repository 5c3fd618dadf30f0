"""The core package stays importable without airflow or pyspark."""

from __future__ import annotations

import subprocess
import sys


def test_core_package_imports_neither_airflow_nor_pyspark() -> None:
    code = (
        "import sys, pkgutil, importlib, kinesis_batch\n"
        "for m in pkgutil.walk_packages(kinesis_batch.__path__, 'kinesis_batch.'):\n"
        "    if not m.name.startswith(('kinesis_batch.airflow', 'kinesis_batch.spark')):\n"
        "        importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('airflow', 'pyspark')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
