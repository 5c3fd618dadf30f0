"""The package as users get it: the core imports neither orchestrator nor pyspark, and the
Dagster adapter no Airflow (the extras kinesis-batch[airflow] and [dagster] install apart); its
public API is a list held here; a built wheel installs and runs without the checkout, moto or
the dev tools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from tests.runs import REPO

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


#: What a library user imports: the run and its settings, the sinks, the error tree, and the
#: building blocks of a consumer of one's own (README, "Using the library").
PUBLIC_API = {
    # the run
    "CatchUpRun", "RunConfig", "RunReport", "ReadLimits", "DecodeSettings", "plan_now",
    # the sinks, and their maintenance
    "Output", "Sink", "CommitRecord", "ShardCommit", "open_sink", "maintain", "MaintainSettings", "MaintenanceReport",
    # the error tree, and what to do with an error
    "KinesisBatchError", "RetryableError", "ThrottledError", "DependencyError", "LeaseError", "LeaseLostError",
    "ShutdownError", "InvalidStateError", "StreamNotFoundError", "LeaseTableNotFoundError", "MalformedLeaseError",
    "LineageError", "TrimmedDataError", "ForeignTableError", "StreamRecreatedError", "IllegalArgumentError",
    "CheckpointOrderError", "BadRecordError", "ForeignOutputError", "classify",
    # stopping at the next safe point
    "StopRequest",
    # the building blocks
    "Shard", "Record", "Lineage", "list_shards", "ShardReader", "ReadResult", "StartPosition", "EndBound",
    "Lease", "LeaseStore", "LeaseManager", "LeaseRenewer", "Checkpoint", "DynamoDBCheckpointStore", "HistoryEntry",
}  # fmt: skip


def test_the_public_api_is_what_a_library_user_imports_and_each_name_is_there() -> None:
    import kinesis_batch
    from kinesis_batch import errors

    assert set(kinesis_batch.__all__) == PUBLIC_API
    assert all(hasattr(kinesis_batch, name) for name in kinesis_batch.__all__)
    tree = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.KinesisBatchError)
    }
    assert tree <= set(kinesis_batch.__all__), "every error of the tree is public"


def test_a_built_wheel_installs_into_a_fresh_venv_and_works_without_the_checkout_or_dev_tools(tmp_path: Path) -> None:
    uv = str(Path(sys.executable).with_name("uv"))
    source = tmp_path / "source"  # only what the build reads: the wheel depends on nothing else of the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    shutil.copytree(REPO / "kinesis_batch", source / "kinesis_batch", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([uv, "build", "--wheel", "--out-dir", str(tmp_path / "dist"), str(source)], **QUIET)
    (wheel,) = (tmp_path / "dist").glob("kinesis_batch-*.whl")

    names = zipfile.ZipFile(wheel).namelist()
    assert {"kinesis_batch/run/catch_up.py", "kinesis_batch/airflow/ui/page.html"} <= set(names)
    assert "kinesis_batch/spark/log4j2.properties" in names
    dev = [n for n in names if any(w in n for w in ("devkit", "devstack", "moto_serial", "limits_proxy", "demo"))]
    assert dev == [] and not [n for n in names if n.startswith(("tests/", "benchmarks/", "tools/"))]

    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--python", sys.executable, str(venv)], **QUIET)
    python = venv / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "--python", str(python), "-c", str(REPO / "constraints.txt"), str(wheel)], **QUIET
    )
    elsewhere = {"cwd": tmp_path, "env": {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}}
    helped = subprocess.run([str(venv / "bin" / "kinesis-batch"), "--help"], **QUIET, **elsewhere)
    assert "run" in helped.stdout and "backfill" in helped.stdout
    code = "import importlib.util, kinesis_batch; print(kinesis_batch.__file__, importlib.util.find_spec('moto'))"
    imported = subprocess.run([str(python), "-c", code], **QUIET, **elsewhere)
    where, moto = imported.stdout.split()
    assert where.startswith(str(venv)) and moto == "None"


QUIET: dict[str, Any] = {"capture_output": True, "text": True, "check": True, "timeout": 300}
