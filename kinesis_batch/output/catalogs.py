"""Iceberg catalogs, configured the way pyiceberg users already configure them.

``--catalog NAME`` loads the catalog NAME from pyiceberg's own configuration
(``~/.pyiceberg.yaml``, ``$PYICEBERG_HOME/.pyiceberg.yaml``, ``PYICEBERG_CATALOG__NAME__*``),
read at call time. The embedded default, when no catalog ``default`` is configured, is a SQLite
catalog with a local warehouse under ``$KINESIS_BATCH_ICEBERG_HOME`` (``~/.kinesis-batch/iceberg``).

S3 and Glue endpoints: pyiceberg's S3 file IO does not read ``AWS_ENDPOINT_URL_S3``, so when the
catalog's configuration names no ``s3.endpoint`` the one resolved by ``kinesis_batch.aws`` is
passed (and ``glue.endpoint`` from ``AWS_ENDPOINT_URL_GLUE``), like for the other services.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kinesis_batch.aws import S3Settings
from kinesis_batch.errors import IllegalArgumentError, from_storage, storage_errors

DEFAULT_CATALOG = "default"
#: The catalog types pyiceberg makes a new table in at WAREHOUSE/NAMESPACE.db/TABLE (the Hive
#: convention); the others (sql, rest's servers aside) at WAREHOUSE/NAMESPACE/TABLE.
HIVE_STYLE = frozenset({"glue", "hive", "dynamodb"})


def embedded_home() -> Path:
    return Path(os.environ.get("KINESIS_BATCH_ICEBERG_HOME") or Path.home() / ".kinesis-batch" / "iceberg")


def table_folder(warehouse: str, namespace: str, table: str, catalog_type: str) -> str:
    """Where pyiceberg makes a new table of a namespace that names no location of its own."""
    database = f"{namespace}.db" if catalog_type in HIVE_STYLE else namespace
    return f"{warehouse.rstrip('/')}/{database}/{table}"


def catalog_config(name: str | None) -> dict[str, Any]:
    """The configuration pyiceberg holds for the catalog ``name`` (None: ``default``, else the
    embedded one's); IllegalArgumentError names the ways to configure an unknown catalog."""
    from pyiceberg.utils.config import Config

    name = name or DEFAULT_CATALOG
    configured = Config().get_catalog_config(name)
    if configured is not None:
        return dict(configured)
    if name != DEFAULT_CATALOG:
        raise IllegalArgumentError(
            f"--catalog {name}: no such pyiceberg catalog; configure it in ~/.pyiceberg.yaml "
            f"(catalog: {name}: ...) or with PYICEBERG_CATALOG__{name.upper()}__TYPE and its other settings"
        )
    return _embedded(embedded_home())


def _embedded(home: Path) -> dict[str, Any]:
    return {"type": "sql", "uri": f"sqlite:///{home / 'catalog.db'}", "warehouse": f"file://{home / 'warehouse'}"}


def load_catalog(name: str | None, s3: S3Settings) -> Any:
    """The pyiceberg catalog ``name`` (None: ``default``), or the embedded one; IllegalArgumentError
    names the ways to configure an unknown catalog."""
    from pyiceberg.catalog import load_catalog as pyiceberg_load

    name = name or DEFAULT_CATALOG
    configured = catalog_config(name)
    home = embedded_home()
    if configured == _embedded(home):
        (home / "warehouse").mkdir(parents=True, exist_ok=True)
    properties: dict[str, Any] = dict(configured)
    if s3.endpoint_url and "s3.endpoint" not in properties:
        properties["s3.endpoint"] = s3.endpoint_url
    if s3.region and "s3.region" not in properties:
        properties["s3.region"] = s3.region
    if s3.access_key and "s3.access-key-id" not in properties:
        properties |= {"s3.access-key-id": s3.access_key, "s3.secret-access-key": s3.secret_key or ""}
        if s3.session_token:
            properties["s3.session-token"] = s3.session_token
    glue = os.environ.get("AWS_ENDPOINT_URL_GLUE")
    if glue and "glue.endpoint" not in properties:
        properties["glue.endpoint"] = glue
    try:
        return pyiceberg_load(name, **properties)
    except (ValueError, KeyError, ImportError) as exc:
        raise IllegalArgumentError(f"--catalog {name}: {str(exc).splitlines()[0]}") from exc
    except Exception as exc:  # the catalog's service could not be reached, or refused us
        raise from_storage(exc, f"--catalog {name}", remote=True) from exc


def create_namespace(catalog: Any, namespace: str) -> None:
    """Make ``namespace`` in ``catalog`` unless it exists. Two first runs may make it at the same
    moment, and a SQL catalog checks, then inserts: the loser's insert fails on the winner's row.
    A namespace that exists afterwards is what was asked for; any other failure stands."""
    try:
        catalog.create_namespace_if_not_exists(namespace)
    except Exception:
        if not catalog.namespace_exists(namespace):
            raise


def catalog_errors(what: str) -> AbstractContextManager[None]:
    """The catalog's and pyiceberg's errors as one line of this package's tree. A commit conflict
    and a missing table pass through: the callers decide on them."""
    from pyiceberg.exceptions import CommitFailedException, NoSuchTableError

    return storage_errors(what, remote=True, passing=(CommitFailedException, NoSuchTableError))


__all__ = [
    "DEFAULT_CATALOG", "HIVE_STYLE", "catalog_config", "catalog_errors", "create_namespace", "embedded_home",
    "load_catalog", "table_folder",
]  # fmt: skip
