"""The table of formats: each row's parts are where the row says, every format-dependent rule
reads the row, and no module outside a format's own names a format (checked on the source, so
that adding a format stays one row plus its own modules, as docs/architecture.md says)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output.formats import FORMATS, ROWS, Format, format_of, implied, validate_output

pytestmark = pytest.mark.contract("tables", why="each format's publish and read-back with these table libraries")

PACKAGE = Path(__file__).resolve().parents[2] / "kinesis_batch"


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_each_rows_parts_are_where_the_row_says(row: Format) -> None:
    assert callable(row.parts().open_table)
    assert callable(row.maintenance().maintainer)


def own_modules(name: str) -> set[str]:
    """A format's own modules, as docs/architecture.md lists them."""
    own = {f"output/{name}.py", f"output/{name}_changes.py", f"maintenance/{name}.py"}
    return {path for path in own if (PACKAGE / path).exists()}


#: Modules that name a format for another reason than its rules, each with why.
NAMED_FOR_ANOTHER_REASON = {
    "output/formats.py": "the table of formats itself",
    "defaults.py": "the default --format",
    "output/catalogs.py": "pyiceberg's catalogs: Iceberg's own (its embedded catalog's folder)",
}


def test_the_nodes_environment_carries_each_formats_table_library() -> None:
    from kinesis_batch.environment import DRIVER_EXTRAS

    assert DRIVER_EXTRAS == ("delta", "iceberg")


def test_no_module_outside_a_formats_own_names_a_format() -> None:
    allowed = set(NAMED_FOR_ANOTHER_REASON) | {path for name in FORMATS for path in own_modules(name)}
    naming: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in allowed:
            continue
        tree = ast.parse(path.read_text())
        said = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in FORMATS
        ]
        if said:
            naming[where] = said
    assert naming == {}


@pytest.mark.parametrize(
    ("format", "output", "catalog", "says"),
    [
        ("csv", "/x", None, "--format: 'csv' is not one of parquet, delta, iceberg"),
        ("parquet", "/x", "glue", "--catalog goes with --format iceberg"),
        ("parquet", "s3://b/x", None, "the parquet format publishes by renaming a folder"),
        ("delta", "/x", "glue", "--catalog goes with --format iceberg"),
        ("iceberg", "clicks", None, "an Iceberg table is named NAMESPACE.TABLE"),
        ("iceberg", "a..b", None, "NAMESPACE.TABLE"),
        ("iceberg", "a/b.c", None, "NAMESPACE.TABLE"),
    ],
)
def test_an_output_a_format_cannot_work_with_is_one_line(
    format: str, output: str, catalog: str | None, says: str
) -> None:
    with pytest.raises(IllegalArgumentError, match=says):
        validate_output(format, output, catalog)


@pytest.mark.parametrize(
    ("format", "output", "catalog"),
    [
        ("parquet", "/x", None),
        ("delta", "s3://b/x", None),
        ("iceberg", "analytics.clicks", "glue"),
        ("iceberg", "a.b.c", None),
    ],
)
def test_an_output_a_format_works_with_passes(format: str, output: str, catalog: str | None) -> None:
    validate_output(format, output, catalog)


def test_only_the_formats_that_merge_take_changes() -> None:
    format_of("delta").check_merges("dynamodb")
    with pytest.raises(IllegalArgumentError, match="--changes dynamodb needs --format delta or iceberg: parquet"):
        format_of("parquet").check_merges("dynamodb")


@pytest.mark.parametrize(
    ("format", "main", "backfill"),
    [
        ("parquet", "/lake/clicks/", "/lake/clicks-backfill-B-1"),
        ("delta", "s3://lake/clicks", "s3://lake/clicks_backfill_B-1"),
        ("iceberg", "analytics.clicks", "analytics.clicks_backfill_b_1"),
    ],
)
def test_a_backfills_own_output_is_named_by_its_formats_row(format: str, main: str, backfill: str) -> None:
    assert format_of(format).backfill(main, "B-1") == backfill


@pytest.mark.parametrize(
    ("output", "format"),
    [("s3://lake/t", "delta"), ("s3a://lake/t", "delta"), ("/data/t", None), ("analytics.clicks", None)],
)
def test_the_one_format_a_location_can_be_is_implied_and_no_other(output: str, format: str | None) -> None:
    assert implied(output) == format
