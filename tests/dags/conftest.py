"""The DagBag of the repo's dags/ folder (Airflow itself is set up by tests/conftest.py's airflow_home)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DAGS


@pytest.fixture(scope="session")
def dagbag(airflow_home: Path) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))
