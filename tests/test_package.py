"""The core package imports neither orchestrator nor pyspark, and the Dagster adapter no Airflow
(the extras kinesis-batch[airflow] and [dagster] install apart)."""

from __future__ import annotations

import json
import subprocess
import sys

ADAPTERS = ("kinesis_batch.airflow", "kinesis_batch.dagster", "kinesis_batch.spark")


def imported_after(prefixes: tuple[str, ...], skip: tuple[str, ...]) -> list[str]:
    """The top-level packages among airflow, dagster and pyspark in sys.modules after importing
    every module of kinesis_batch under ``prefixes`` (but not under ``skip``, and no ``__main__``:
    importing one runs its program)."""
    # Module names from the files: pkgutil.walk_packages would import every package to walk it.
    code = (
        "import sys, json, importlib, pathlib, kinesis_batch\n"
        "root = pathlib.Path(kinesis_batch.__file__).parent\n"
        "for path in sorted(root.rglob('*.py')):\n"
        "    parts = path.relative_to(root).with_suffix('').parts\n"
        "    name = '.'.join(('kinesis_batch', *parts)).removesuffix('.__init__')\n"
        f"    if name.startswith({prefixes!r}) and not name.startswith({skip!r}) and parts[-1] != '__main__':\n"
        "        importlib.import_module(name)\n"
        "found = sorted({n.split('.')[0] for n in sys.modules} & {'airflow', 'dagster', 'pyspark'})\n"
        "print('IMPORTED=' + json.dumps(found))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    (line,) = [line for line in out.splitlines() if line.startswith("IMPORTED=")]  # Airflow logs to stdout too
    found: list[str] = json.loads(line.removeprefix("IMPORTED="))
    return found


def test_core_package_imports_neither_airflow_nor_dagster_nor_pyspark() -> None:
    assert imported_after(("kinesis_batch.",), ADAPTERS) == []


def test_the_dagster_adapter_does_not_import_airflow() -> None:
    # definitions.py loads the streams file of the working directory: the entry point, not the library.
    assert "airflow" not in imported_after(("kinesis_batch.dagster",), ("kinesis_batch.dagster.definitions",))
