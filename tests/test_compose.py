"""docker-compose.yml brings up the whole stack: validated without a Docker engine."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parents[1] / "docker-compose.yml"
SERVICES = {
    "postgres",
    "airflow-api-server",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "spark-master",
    "spark-worker",
    "kinesis",
    "dynamodb",
}


def test_compose_file_is_valid_for_docker_compose() -> None:
    docker_compose = shutil.which("docker-compose")
    assert docker_compose, "docker-compose is installed by tools/bootstrap.sh (apt, as root)"
    result = subprocess.run([docker_compose, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_compose_runs_airflow_spark_and_local_aws_with_dags_and_package_mounted() -> None:
    spec = yaml.safe_load(COMPOSE.read_text())
    assert set(spec["services"]) >= SERVICES
    scheduler = spec["services"]["airflow-scheduler"]
    assert "./dags:/opt/airflow/dags" in scheduler["volumes"] and ".:/opt/kinesis-batch" in scheduler["volumes"]
    assert "service_config" in scheduler["environment"]["AIRFLOW_CONN_AWS_DEFAULT"]
    # Servers are published on loopback only.
    ports = [p for service in spec["services"].values() for p in service.get("ports", [])]
    assert ports and all(p.startswith("127.0.0.1:") for p in ports)
