"""The executors' environment archive: its platform tags, its requirements, its Spark settings.
The archive itself is built and used by a standalone cluster whose executors run a bare Python
(tests/dags/test_kinesis_catchup_on_a_cluster.py); its bad input by tests/cli/test_package.py."""

from __future__ import annotations

import importlib.metadata
import tarfile
from pathlib import Path

import pytest

from kinesis_batch.environment import ALIAS, Package, build, manylinux_tags, runtime_requirements
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.storage.place import Place


@pytest.mark.parametrize(
    ("arch", "glibc", "first", "count"),
    [
        ("x86_64", (2, 28), "manylinux_2_28_x86_64", 13),  # 2_28 .. 2_17, and manylinux2014
        ("aarch64", (2, 28), "manylinux_2_28_aarch64", 13),
        ("aarch64", (2, 34), "manylinux_2_34_aarch64", 19),
        ("x86_64", (2, 17), "manylinux_2_17_x86_64", 2),
    ],
)
def test_every_manylinux_tag_up_to_the_glibc_is_named_and_the_2014_alias_last(
    arch: str, glibc: tuple[int, int], first: str, count: int
) -> None:
    tags = manylinux_tags(arch, glibc)
    assert (tags[0], len(tags), tags[-1]) == (first, count, f"manylinux2014_{arch}")
    assert f"manylinux_2_24_{arch}" in tags or glibc < (2, 24)  # arro3-core's aarch64 wheels


def test_the_requirements_are_the_packages_own_dependencies_and_table_libraries_at_the_versions_installed_here() -> (
    None
):
    wanted = runtime_requirements()
    names = {requirement.split("==")[0].split("[")[0] for requirement in wanted}
    own = {"boto3", "aws-kinesis-agg", "pyarrow", "msgspec", "fastavro", "protobuf"}
    assert names == own | {"deltalake", "pyiceberg"}  # a driver on the cluster opens the table too
    for requirement in wanted:
        name, version = requirement.split("==")
        assert version == importlib.metadata.version(name.split("[")[0])
    assert "pyiceberg[glue,pyarrow,sql-sqlite]" in {r.split("==")[0] for r in wanted}  # its catalogs' libraries


def test_the_settings_unpack_the_archive_and_put_it_on_the_executors_and_a_cluster_drivers_path() -> None:
    settings = dict(Package("s3://b/envs/kb.tar.gz", "3.11", "x86_64").settings)
    assert settings["spark.archives"] == f"s3://b/envs/kb.tar.gz#{ALIAS}"
    assert settings["spark.executorEnv.PYTHONPATH"] == f"./{ALIAS}"
    assert settings["spark.emr-serverless.driverEnv.PYTHONPATH"] == f"./{ALIAS}"


@pytest.mark.parametrize(("python", "arch", "says"), [("3", "x86_64", "--python '3'"), ("3.11", "arm64", "--arch")])
def test_a_python_or_architecture_that_is_not_one_is_refused_before_anything_is_resolved(
    python: str, arch: str, says: str
) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        build(python, arch, Place("/nonexistent/never-written"))


def test_the_archive_holds_the_package_and_its_dependencies_not_the_checkout(environment_archive_file: Path) -> None:
    with tarfile.open(environment_archive_file) as archive:
        names = archive.getnames()
    ours = {name for name in names if name.startswith("kinesis_batch/")}
    assert {"kinesis_batch/__init__.py", "kinesis_batch/environment.py", "kinesis_batch/cli/read_step.py"} <= ours
    assert not any(part in name for name in ours for part in ("/tests/", "/.venv/", "/docs/", "__pycache__"))
    assert {"pyarrow", "deltalake", "pyiceberg", "msgspec"} <= {name.split("/")[0] for name in names}
    assert environment_archive_file.stat().st_size < 300 * 2**20  # 149 MiB here
