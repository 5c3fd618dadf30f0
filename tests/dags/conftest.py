"""Airflow for the DAG tests: a SQLite metadata DB in a temporary AIRFLOW_HOME, the repo's dags/
folder, and the aws_default connection pointing at the local stack (one endpoint per service)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch.devstack import STATIC_ENV, LocalStack

DAGS = Path(__file__).resolve().parents[2] / "dags"


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory, stack: LocalStack) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("airflow-home")
    settings = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW_CONN_AWS_DEFAULT": json.dumps(
            {
                "conn_type": "aws",
                "login": STATIC_ENV["AWS_ACCESS_KEY_ID"],
                "password": STATIC_ENV["AWS_SECRET_ACCESS_KEY"],
                "extra": {
                    "region_name": STATIC_ENV["AWS_DEFAULT_REGION"],
                    "service_config": {
                        "kinesis": {"endpoint_url": stack.kinesis["kinesalite"].url},
                        "dynamodb": {"endpoint_url": stack.dynamodb.url},
                    },
                },
            }
        ),
    }
    os.environ.update(settings)  # before airflow is imported: it reads its settings once
    migrate = subprocess.run(
        [str(Path(sys.executable).with_name("airflow")), "db", "migrate"], capture_output=True, text=True, timeout=300
    )
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    yield home


@pytest.fixture(scope="session")
def dagbag(airflow_home: Path) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))
