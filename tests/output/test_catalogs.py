"""Iceberg catalogs: a namespace two first runs make at the same moment (a real SQL catalog, its
check made before the other run's insert)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from kinesis_batch.output.catalogs import create_namespace, table_folder

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")


class CheckedTooEarly(SqlCatalog):
    """A SQL catalog whose first existence check ran before another run's insert landed."""

    checked = False

    def namespace_exists(self, namespace: Any) -> bool:
        if not self.checked:
            self.checked = True
            return False
        return bool(super().namespace_exists(namespace))


def catalogs(tmp_path: Path) -> tuple[SqlCatalog, CheckedTooEarly]:
    settings = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    return SqlCatalog("lake", **settings), CheckedTooEarly("lake", **settings)


def test_a_namespace_another_run_made_meanwhile_is_taken_as_made(tmp_path: Path) -> None:
    other_run, this_run = catalogs(tmp_path)
    other_run.create_namespace("lake")

    create_namespace(this_run, "lake")  # its insert fails on the other's row: the namespace is there

    assert this_run.checked and other_run.namespace_exists("lake")


def test_a_namespace_that_cannot_be_made_is_still_an_error(tmp_path: Path) -> None:
    _, this_run = catalogs(tmp_path)
    with pytest.raises(Exception, match=r"[Nn]amespace"):
        create_namespace(this_run, "")


@pytest.mark.parametrize(
    ("kind", "folder"),
    [
        ("glue", "s3://wh/lake.db/t"),
        ("hive", "s3://wh/lake.db/t"),
        ("sql", "s3://wh/lake/t"),
        ("rest", "s3://wh/lake/t"),
    ],
)
def test_a_new_tables_folder_is_where_pyiceberg_puts_it_by_its_catalogs_type(kind: str, folder: str) -> None:
    assert table_folder("s3://wh/", "lake", "t", kind) == folder
