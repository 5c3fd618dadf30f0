"""What a stream setting is as an option (kinesis_batch.settings): where adapters offer it, how
they show it, and its value checked for its type."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection
from dataclasses import MISSING, Field, field
from typing import Any

from kinesis_batch.bounds import ANY, Bound
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
    bound: Bound = ANY,
    where: frozenset[str] = EVERYWHERE,
    group: str = "",
    repeat: str = "",
    parse: Callable[[Any], Any] | None = None,
) -> Any:
    """A field of the settings with what adapters show of it (``bound``: a number's, which
    :func:`coerce` checks and the forms show; ``repeat``: the command line's flag may be given
    again, its values joined by this; ``parse``: a table of settings of its own, made into its
    value by this, which checks it)."""
    meta = dict(help=help, choices=choices, bound=bound, where=where, group=group, repeat=repeat, parse=parse)
    if default is MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


def not_a_setting(name: str, names: Collection[str], *, within: str = "") -> IllegalArgumentError:
    """The one line for a setting nobody offers: the likeliest meant, else every one there is
    (``within``: whose settings, ``emr_serverless.``)."""
    meant = difflib.get_close_matches(name, list(names), n=1, cutoff=0.75)
    hint = f"did you mean {within}{meant[0]}?" if meant else f"the settings: {', '.join(sorted(names))}"
    return IllegalArgumentError(f"{within}{name}: not a setting ({hint})")


def kind(option: Field[Any]) -> type:
    """The option's Python type (str, int or float; dict for a table of settings)."""
    return dict if option.metadata.get("parse") else _KINDS[str(option.type)]


def flag(option: Field[Any]) -> str:
    return "--" + option.name.replace("_", "-")


def coerce(settings: Any, option: Field[Any]) -> None:
    """A TOML or JSON value of the field's type (a whole number is a fine float) within its
    bounds, else one line."""
    wanted, value = kind(option), getattr(settings, option.name)
    if option.metadata.get("parse"):
        object.__setattr__(settings, option.name, option.metadata["parse"](value))
    elif wanted is float and isinstance(value, int) and not isinstance(value, bool):
        object.__setattr__(settings, option.name, float(value))
    elif not isinstance(value, wanted) or isinstance(value, bool):
        named = {float: "number", int: "whole number"}.get(wanted, "string")
        raise IllegalArgumentError(f"{flag(option)}: {value!r} is not a {named}")
    if wanted in (int, float):
        bound_of(option).check(flag(option), getattr(settings, option.name))


def bound_of(option: Field[Any]) -> Bound:
    """A number option's bounds (ANY: none)."""
    found: Bound = option.metadata.get("bound", ANY)
    return found


__all__ = ["AIRFLOW", "CLI", "DAGSTER", "EVERYWHERE", "ORCHESTRATED", "bound_of", "coerce", "flag", "kind", "option"]
