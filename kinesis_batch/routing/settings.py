"""The settings a routed stream (``--route-by``) needs beside it, each mistake one line (exit 2)."""

from __future__ import annotations

from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.routing.routes import MAX_LENGTH, ROUTE, RouteRule, check_template, is_route


def check_routing(
    output: str, rule: RouteRule | None, decode: str, changes: ChangeSettings | None, dead_letter_output: str
) -> None:
    """``--output`` names each table with ``{route}`` exactly when routing; routing reads
    decoded records (or a source's changes), keeps one dead-letter output, and a
    ``--key ROUTE:COL`` names a route the run may take."""
    route_by = rule.spelled if rule else None
    check_template(output, route_by)
    if changes is not None:
        _check_route_keys(changes, rule)
    if rule is None:
        return
    if decode == "raw" and (changes is None or not changes.envelope):
        raise IllegalArgumentError(f"--route-by {route_by} reads decoded records: --decode json, avro or protobuf")
    if ROUTE in dead_letter_output:
        raise IllegalArgumentError(
            f"--dead-letter-output {dead_letter_output}: one for the whole stream, without {ROUTE}"
        )


def _check_route_keys(changes: ChangeSettings, rule: RouteRule | None) -> None:
    for route in sorted(changes.route_keys):
        given = f"--key {route}:{','.join(changes.route_keys[route])}"
        if rule is None:
            raise IllegalArgumentError(f"{given} names a routed table's key: it goes with --route-by")
        if not is_route(route):
            raise IllegalArgumentError(
                f"{given}: {route!r} cannot name a table (letters, digits, _ and -, at most {MAX_LENGTH}, "
                "not starting with _)"
            )
        if rule.allowed is not None and route not in rule.allowed:
            raise IllegalArgumentError(f"{given}: route {route!r} is not one of --routes")


__all__ = ["check_routing"]
