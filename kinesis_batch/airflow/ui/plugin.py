"""Registers the consumer page with Airflow (entry point ``airflow.plugins`` in pyproject.toml).

The FastAPI app is mounted at ``/kinesis-batch``; the external view puts "Kinesis consumers"
in the navigation and shows the app's page inside the Airflow UI at ``/plugin/kinesis-batch``.
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from kinesis_batch.airflow.ui.api import create_app

URL_PREFIX = "/kinesis-batch"
# Three waves, inline: the navigation draws it before anyone has signed in to the plugin's app.
ICON = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24' fill='none' "
    "stroke='%234a4848' stroke-width='2' stroke-linecap='round'%3E%3Cpath d='M3 7c3-3 6 3 9 0s6 3 9 0'/%3E"
    "%3Cpath d='M3 12c3-3 6 3 9 0s6 3 9 0'/%3E%3Cpath d='M3 17c3-3 6 3 9 0s6 3 9 0'/%3E%3C/svg%3E"
)


class KinesisBatchPlugin(AirflowPlugin):
    name = "kinesis_batch"
    # Lists, as AirflowPlugin declares them (its own attributes are not ClassVars).
    fastapi_apps: list[Any] = [  # noqa: RUF012
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "kinesis-batch"}
    ]
    external_views: list[Any] = [  # noqa: RUF012
        {
            "name": "Kinesis consumers",
            "href": f"{URL_PREFIX.lstrip('/')}/",  # relative to Airflow's base URL
            "url_route": "kinesis-batch",
            "destination": "nav",
            "nav_top_level": True,
            "icon": ICON,
        }
    ]
