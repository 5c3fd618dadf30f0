"""A run's parent from the standard variables (a table of cases), and back: what
:meth:`ParentRun.environ` gives a child, :meth:`ParentRun.from_environ` reads alike (property)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.openlineage.origin import ALONE, Origin, ParentRun, RunRef

TASK_RUN = "01931f2e-5c3a-7b1e-9f00-3c2b1a0d9e8f"
DAG_RUN = "01931f2e-5c3a-7b1e-9f00-000000000001"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"OPENLINEAGE_PARENT_ID": ""}, None),
        (
            {"OPENLINEAGE_PARENT_ID": f"default/dag.task/{TASK_RUN}"},
            ParentRun(RunRef("default", "dag.task", TASK_RUN), RunRef("default", "dag.task", TASK_RUN)),
        ),
        (
            {
                "OPENLINEAGE_PARENT_ID": f"default/dag.task/{TASK_RUN}",
                "OPENLINEAGE_ROOT_PARENT_ID": f"prod/dag/{DAG_RUN}",
            },
            ParentRun(RunRef("default", "dag.task", TASK_RUN), RunRef("prod", "dag", DAG_RUN)),
        ),
        ({"OPENLINEAGE_ROOT_PARENT_ID": f"prod/dag/{DAG_RUN}"}, None),  # a root alone names no parent
    ],
)
def test_the_parent_from_the_standard_variables(environ: dict[str, str], expected: ParentRun | None) -> None:
    assert ParentRun.from_environ(environ) == expected
    assert Origin.from_environ(environ) == Origin(expected)


@pytest.mark.parametrize(
    ("environ", "line"),
    [
        (
            {"OPENLINEAGE_PARENT_ID": "default/dag.task"},
            "OPENLINEAGE_PARENT_ID: 'default/dag.task' is not NAMESPACE/JOB/RUN_ID",
        ),
        (
            {"OPENLINEAGE_PARENT_ID": "default/dag.task/7"},
            "'default/dag.task/7': '7' is not an OpenLineage run id (a UUID)",
        ),
        ({"OPENLINEAGE_PARENT_ID": f"/dag.task/{TASK_RUN}"}, "an OpenLineage run needs a namespace and a job name"),
        (
            {"OPENLINEAGE_PARENT_ID": f"default/dag.task/{TASK_RUN}", "OPENLINEAGE_ROOT_PARENT_ID": "dag"},
            "OPENLINEAGE_ROOT_PARENT_ID: 'dag' is not NAMESPACE/JOB/RUN_ID",
        ),
    ],
)
def test_variables_that_do_not_parse_are_one_line(environ: dict[str, str], line: str) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        ParentRun.from_environ(environ)
    assert line in str(raised.value) and "\n" not in str(raised.value)


names = st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1, max_size=20)
refs = st.builds(RunRef, names, names, st.uuids().map(str))


@given(refs, st.none() | refs)
def test_what_a_parent_gives_its_child_reads_back_alike(parent: RunRef, root: RunRef | None) -> None:
    made = ParentRun.of(parent, root)
    assert ParentRun.from_environ(made.environ()) == made
    assert made.root == (root or parent)


def test_a_run_alone_has_no_parent_and_no_source() -> None:
    assert ALONE.parent is None and ALONE.source is None
