"""The settings a routed stream (``--route-by``) needs beside it, each mistake one line (exit 2)."""

from __future__ import annotations

from kinesis_batch.changes.settings import ENVELOPES
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.routing.routes import ROUTE, RouteRule, check_template


def check_routing(output: str, rule: RouteRule | None, decode: str, changes: str, dead_letter_output: str) -> None:
    """``--output`` names each table with ``{route}`` exactly when routing; routing reads
    decoded records, lands events (not yet changes), and keeps one dead-letter output."""
    route_by = rule.spelled if rule else None
    check_template(output, route_by)
    if rule is None:
        return
    if decode == "raw" and changes not in ENVELOPES:
        raise IllegalArgumentError(f"--route-by {route_by} reads decoded records: --decode json, avro or protobuf")
    if changes:
        raise routed_changes(changes)
    if ROUTE in dead_letter_output:
        raise IllegalArgumentError(
            f"--dead-letter-output {dead_letter_output}: one for the whole stream, without {ROUTE}"
        )


def routed_changes(mode: str) -> IllegalArgumentError:
    """The refusal of ``--route-by`` with ``--changes MODE`` (wherever both meet)."""
    return IllegalArgumentError(f"--route-by with --changes {mode}: a routed stream is landed as events for now")


__all__ = ["check_routing", "routed_changes"]
