"""What a stream setting is as an option (kinesis_batch.settings): where adapters offer it, how
they show it, and its value checked for its type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, field
from typing import Any

from kinesis_batch.errors import IllegalArgumentError

#: Where an option is offered: the command line's run and backfill, the Airflow DAG's params,
#: a streams file's entry and Dagster's definitions.
CLI, AIRFLOW, DAGSTER = "cli", "airflow", "dagster"
EVERYWHERE = frozenset({CLI, AIRFLOW, DAGSTER})
ORCHESTRATED = frozenset({AIRFLOW, DAGSTER})
_KINDS = {"str": str, "int": int, "float": float, "bool": bool}


def option(
    default: Any,
    help: str,
    *,
    choices: tuple[str, ...] = (),
    low: float | None = None,
    high: float | None = None,
    where: frozenset[str] = EVERYWHERE,
    group: str = "",
    repeat: str = "",
    parse: Callable[[Any], Any] | None = None,
) -> Any:
    """A field of the settings with what adapters show of it (``repeat``: the command line's
    flag may be given again, its values joined by this; ``parse``: a table of settings of its
    own, made into its value by this, which checks it)."""
    meta = dict(help=help, choices=choices, low=low, high=high, where=where, group=group, repeat=repeat, parse=parse)
    if default is MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


def kind(option: Field[Any]) -> type:
    """The option's Python type (str, int or float; dict for a table of settings)."""
    return dict if option.metadata.get("parse") else _KINDS[str(option.type)]


def flag(option: Field[Any]) -> str:
    return "--" + option.name.replace("_", "-")


def coerce(settings: Any, option: Field[Any]) -> None:
    """A TOML or JSON value of the field's type (a whole number is a fine float), else one line."""
    wanted, value = kind(option), getattr(settings, option.name)
    if option.metadata.get("parse"):
        object.__setattr__(settings, option.name, option.metadata["parse"](value))
    elif wanted is float and isinstance(value, int) and not isinstance(value, bool):
        object.__setattr__(settings, option.name, float(value))
    elif not isinstance(value, wanted) or isinstance(value, bool):
        named = {float: "number", int: "whole number"}.get(wanted, "string")
        raise IllegalArgumentError(f"{flag(option)}: {value!r} is not a {named}")


__all__ = ["AIRFLOW", "CLI", "DAGSTER", "EVERYWHERE", "ORCHESTRATED", "coerce", "flag", "kind", "option"]
