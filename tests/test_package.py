"""The package as users get it: the core imports neither orchestrator nor pyspark, and the
Dagster adapter no Airflow (the extras kinesis-batch[airflow] and [dagster] install apart); its
public API is a list held here; a built wheel installs and runs without the checkout, moto or
the dev tools."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from kinesis_batch.environment import manylinux_tags
from tests.runs import REPO, assert_exactly_once, diamond_stream
from tests.streams import StreamFactory

pytestmark = pytest.mark.isolated("a fresh environment")

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
    "Output", "Sink", "Stored", "CommitRecord", "ShardCommit", "open_sink",
    "maintain", "MaintainSettings", "MaintenanceReport",
    # the error tree, and what to do with an error
    "KinesisBatchError", "RetryableError", "ThrottledError", "DependencyError", "LeaseError", "LeaseLostError",
    "ShutdownError", "InvalidStateError", "StreamNotFoundError", "LeaseTableNotFoundError", "MalformedLeaseError",
    "LineageError", "TrimmedDataError", "ForeignTableError", "StreamRecreatedError", "IllegalArgumentError",
    "CheckpointOrderError", "BadRecordError", "ForeignOutputError", "AccessDeniedError", "KeyUnusableError", "classify",
    # stopping at the next safe point
    "StopRequest",
    # who drives a run, as its OpenLineage events name it
    "Origin", "ParentRun", "RunRef",
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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from only what the build reads: it depends on nothing else of the checkout."""
    uv = str(Path(sys.executable).with_name("uv"))
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    shutil.copytree(REPO / "kinesis_batch", source / "kinesis_batch", ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([uv, "build", "--wheel", "--out-dir", str(dist), str(source)], **QUIET)
    (built,) = dist.glob("kinesis_batch-*.whl")
    return built


def test_a_built_wheel_installs_into_a_fresh_venv_and_works_without_the_checkout_or_dev_tools(
    wheel: Path, tmp_path: Path
) -> None:
    uv = str(Path(sys.executable).with_name("uv"))
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


#: make test-compat (tools/compat.sh) runs the resolutions under MWAA's sets.
COMPAT = os.environ.get("KINESIS_BATCH_COMPAT") == "1"
#: MWAA's package sets (its constraint files, copied unchanged: tools/compat/mwaa/README.md).
MWAA = REPO / "tools" / "compat" / "mwaa"
#: What an Airflow environment takes of ours: no Spark (an MWAA worker runs no Spark driver).
AIRFLOW_EXTRAS = ("airflow", "delta", "iceberg", "openlineage", "metrics", "glue-protobuf")
#: What MWAA 3.0.6 pins below our ranges (docs/platforms.md says so, and why it is not served).
NOT_SERVED_ON_3_0_6 = {
    "apache-airflow", "apache-airflow-providers-amazon", "apache-airflow-providers-openlineage", "boto3",
    "pyarrow", "msgspec", "fastavro", "protobuf",
    "deltalake", "pyiceberg", "openlineage-python", "prometheus-client", "grpcio-tools",
}  # fmt: skip


#: MWAA's Amazon Linux 2023 has glibc 2.34.
MWAA_GLIBC = (2, 34)


def pinned(constraints: Path) -> dict[str, str]:
    """A constraint file's pins, by normalized name."""
    pins = {}
    for line in constraints.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            pins[normalized(name)] = version.strip()
    return pins


def normalized(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def outside_our_ranges(extras: tuple[str, ...], pins: dict[str, str]) -> dict[str, str]:
    """Which of ``pins`` our metadata (pyproject.toml's, read as the wheel's would be) refuses,
    for the base and ``extras``: {package: 'pinned version, our range'}."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in extras for r in project["optional-dependencies"][extra]]
    refused = {}
    for requirement in wanted:
        version = pins.get(normalized(requirement.name))
        if version is not None and not requirement.specifier.contains(version, prereleases=True):
            refused[normalized(requirement.name)] = f"{version}, ours {requirement.specifier}"
    return refused


def test_mwaa_3_3_1s_package_set_is_inside_every_range_of_an_airflow_environments_extras() -> None:
    pins = {**pinned(MWAA / "mwaa-3.3.1-constraints-3.12.txt"), "apache-airflow": "3.3.1"}
    assert outside_our_ranges(AIRFLOW_EXTRAS, pins) == {}


def test_mwaa_3_0_6_is_not_served_and_the_platform_docs_name_each_package_that_is_too_old() -> None:
    pins = {**pinned(MWAA / "mwaa-3.0.6-constraints-3.12.txt"), "apache-airflow": "3.0.6"}
    refused = outside_our_ranges(AIRFLOW_EXTRAS, pins)
    assert set(refused) == NOT_SERVED_ON_3_0_6, refused
    docs = (REPO / "docs" / "platforms.md").read_text()
    paragraph = docs[docs.index("**Amazon MWAA 3.0.6 is not served**") :].split("\n\n")[0]
    named = {name: f"{name} {pinned_at.split(',')[0]}" for name, pinned_at in refused.items()}
    assert all(text in " ".join(paragraph.split()) for text in named.values()), f"docs/platforms.md names {named}"


@pytest.mark.processes
@pytest.mark.skipif(not COMPAT, reason="make test-compat runs it (pip's resolution takes about 30 s an architecture)")
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_wheel_with_an_airflow_environments_extras_resolves_under_mwaa_3_3_1s_set(
    wheel: Path, arch: str, tmp_path: Path
) -> None:
    """pip's resolver, as MWAA's requirements.txt install runs it, for Python 3.12 on ``arch``,
    without that interpreter: wheels only, of every manylinux tag MWAA's glibc takes."""
    constraints = MWAA / "mwaa-3.3.1-constraints-3.12.txt"
    report = tmp_path / "report.json"
    command = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
        "--target", str(tmp_path / "target"), "--report", str(report),
        "--python-version", "3.12", "--implementation", "cp", "--only-binary=:all:",
        *[f"--platform={tag}" for tag in manylinux_tags(arch, MWAA_GLIBC)],
        "-c", str(constraints), f"{wheel}[{','.join(AIRFLOW_EXTRAS)}]", "apache-airflow==3.3.1",
    ]  # fmt: skip
    resolved = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert resolved.returncode == 0, resolved.stderr[-3000:]
    versions = {
        normalized(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert versions["kinesis-batch"] and versions["apache-airflow"] == "3.3.1"
    pins = pinned(constraints)
    moved = {
        name: (version, pins[name]) for name, version in versions.items() if name in pins and pins[name] != version
    }
    assert moved == {}, "every package of MWAA's set stays at its version"
    assert {"deltalake", "pyiceberg", "pyarrow", "apache-airflow-providers-amazon"} <= set(versions)


# The package sets a user's fresh environment takes the wheel under: constraints.txt's with its
# [spark,delta] alone, and Amazon MWAA 3.3.1's (on its Python, 3.12: make test-compat's
# mwaa-3.3.1) with a self-run Airflow's [spark,delta,airflow]. Neither brings pandas.
PACKAGE_SETS = {
    "constraints": (REPO / "constraints.txt", "spark,delta", None),
    "mwaa-3.3.1": (MWAA / "mwaa-3.3.1-constraints-3.12.txt", "spark,delta,airflow", (3, 12)),
}


@pytest.mark.parametrize("package_set", PACKAGE_SETS)
def test_the_wheel_with_spark_and_delta_alone_lands_a_resharded_stream_exactly_once_on_local_spark(
    wheel: Path, tmp_path: Path, kinesis: Any, streams: StreamFactory, package_set: str
) -> None:
    """``pip install 'kinesis-batch[spark,delta]'`` as a user runs it: a fresh environment with
    nothing else (no pandas, which no extra of ours installs; the dev tools would bring it), away
    from the checkout, runs the read step on local Spark into a Delta table."""
    package_pins, extras, python_needed = PACKAGE_SETS[package_set]
    if python_needed is not None and sys.version_info[:2] != python_needed:
        pytest.skip(f"{package_set}'s set is for Python {python_needed[0]}.{python_needed[1]} (make test-compat)")
    uv = str(Path(sys.executable).with_name("uv"))
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--python", sys.executable, str(venv)], **QUIET)
    # This environment's PySpark (make test-compat's 3.5s too), the rest the set's.
    pyspark = importlib.metadata.version("pyspark")
    constraints = tmp_path / "constraints.txt"
    kept = [line for line in package_pins.read_text().splitlines() if not line.startswith(("pyspark", "py4j"))]
    constraints.write_text("\n".join([*kept, f"pyspark=={pyspark}"]) + "\n")
    wheels = subprocess.run([str(REPO / "tools" / "wheelhouse.sh"), sys.executable, pyspark], **QUIET).stdout.strip()
    found = ["--find-links", wheels] if wheels else []
    subprocess.run(
        [uv, "pip", "install", "--python", str(venv / "bin" / "python"), *found, "-c", str(constraints),
         f"{wheel}[{extras}]"],
        **{**QUIET, "timeout": 900},  # MWAA's set: Airflow and its 200 packages
    )  # fmt: skip
    python = str(venv / "bin" / "python")
    pandas = subprocess.run([python, "-c", "import pandas"], capture_output=True, cwd=tmp_path)
    assert pandas.returncode != 0, f"pandas came with [{extras}]: the test would not show its absence"
    name = streams.create(shards=3)
    sent = diamond_stream(kinesis, name, 40)
    output = tmp_path / "table"
    elsewhere = {"cwd": tmp_path, "env": {**os.environ, "PYTHONPATH": ""}}

    ran = subprocess.run(
        [str(venv / "bin" / "kinesis-batch"), "run", "--stream", name, "--format", "delta", "--output", str(output),
         "--read-limits", "none", "--spark-master", "local[2]"],
        capture_output=True, text=True, timeout=300, **elsewhere,
    )  # fmt: skip

    assert ran.returncode == 0, ran.stderr[-3000:]
    from deltalake import DeltaTable

    rows = DeltaTable(str(output)).to_pyarrow_table().to_pydict()
    assert_exactly_once(rows, sent)
