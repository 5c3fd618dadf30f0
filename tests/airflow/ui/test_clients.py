"""The UI page builds its AWS clients once, and again only when the Airflow connection changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CONNECTION = ["v1"]
BUILT: list[str] = []


class Hook:
    def connection_fingerprint(self) -> str:
        return CONNECTION[0]

    def kinesis(self) -> Any:
        BUILT.append("kinesis")
        return ("kinesis", CONNECTION[0])

    def dynamodb(self) -> Any:
        return ("dynamodb", CONNECTION[0])


def test_requests_share_the_clients_until_the_connection_changes(airflow_home: Path) -> None:
    from kinesis_batch.airflow.ui.api import Clients  # airflow reads its settings once: after airflow_home

    clients = Clients(Hook)  # type: ignore[arg-type]
    _, kinesis, _ = clients.get()
    for _ in range(5):
        assert clients.get()[1] is kinesis
    assert BUILT == ["kinesis"]
    CONNECTION[0] = "v2"  # an edited connection: new clients
    assert clients.get()[1:] == (("kinesis", "v2"), ("dynamodb", "v2")) and BUILT == ["kinesis", "kinesis"]
