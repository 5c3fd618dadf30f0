"""The embedded Spark's JVM options: the class-data archive is used when it is there, written
when asked for, and never required."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinesis_batch.spark.session import (
    ARCHIVE_SETTING,
    LOCAL_JVM_OPTIONS,
    class_archive,
    local_jvm_options,
)

pytestmark = pytest.mark.contract("spark", why="the embedded JVM's options on this PySpark")


def test_an_archive_that_exists_is_mapped_and_its_refusal_stays_quiet(tmp_path: Path) -> None:
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"\0")
    options = local_jvm_options(archive)
    assert options.startswith(LOCAL_JVM_OPTIONS)
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert "-Xlog:cds=off" in options  # a refused archive would print on stdout, where --json goes


def test_without_an_archive_spark_starts_as_before(tmp_path: Path) -> None:
    assert local_jvm_options(tmp_path / "missing.jsa") == LOCAL_JVM_OPTIONS


def test_dumping_writes_the_archive_at_the_jvms_exit(tmp_path: Path) -> None:
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}" in local_jvm_options(tmp_path / "new.jsa", dump=True)


def test_the_archive_lives_in_the_environment_unless_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ARCHIVE_SETTING, raising=False)
    assert class_archive().parts[-3:] == ("share", "kinesis-batch", "spark.jsa")
    monkeypatch.setenv(ARCHIVE_SETTING, str(tmp_path / "x.jsa"))
    assert class_archive() == tmp_path / "x.jsa"
