"""The DagBag of the repo's dags/ folder (Airflow itself is set up by tests/conftest.py's airflow_home)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DAGS


@pytest.fixture(scope="session")
def dagbag(airflow_home: Path) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


@pytest.fixture(autouse=True)
def params_as_parsed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test sees the DAGs' params as the file declares them.

    ``dag.test(run_conf=...)`` resolves the run's conf into the DAG's own Param objects (Airflow's
    ``process_params`` copies them into the run's ParamsDict by reference), so in one test process
    the next run would take the previous run's conf as its defaults. In production every task
    parses its DAG afresh, so this is a test-process concern only.
    """
    if "dagbag" not in request.fixturenames:
        yield
        return
    dagbag = request.getfixturevalue("dagbag")
    params = {
        id(param): (param, param.value)
        for dag in dagbag.dags.values()
        for owner in (dag, *dag.tasks)
        for key in owner.params
        for param in [owner.params.get_param(key)]
    }
    yield
    for param, value in params.values():
        param.value = value
