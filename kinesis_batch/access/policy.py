"""Pure: the IAM policy documents of a deployment, one per principal, from what its streams'
runs need (kinesis_batch.access.needs): statements of the same purpose merged, every resource
an ARN the settings name, ``"*"`` only where the action has no resource type (CloudWatch's
PutMetricData, held to the namespace by a condition) or in a resource policy (a key policy's
``"*"`` is that key)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kinesis_batch.access.needs import EXECUTORS, WORKER, Need

VERSION = "2012-10-17"


def documents(found: Iterable[Need], *, reads_here: bool) -> dict[str, dict[str, Any]]:
    """Each principal's document, by principal (in the order first needed); ``reads_here``: the
    worker reads in its own process, so it holds the executors' statements too."""
    found = list(found)
    by_principal: dict[str, list[Need]] = {}
    for need in found:
        by_principal.setdefault(need.principal, []).append(need)
    if reads_here:  # what the worker grants itself already is not said twice
        worker = by_principal.setdefault(WORKER, [])
        worker += [need for need in by_principal.get(EXECUTORS, []) if not _covered(need, worker)]
    return {principal: document(needs) for principal, needs in by_principal.items()}


def _covered(need: Need, granted: list[Need]) -> bool:
    """Whether every action of ``need`` on every one of its resources is already granted, under
    the same conditions."""
    pairs = {(a, r) for g in granted if (g.conditions, g.principals) == (need.conditions, need.principals)
             for a in g.actions for r in g.resources}  # fmt: skip
    return all((action, resource) in pairs for action in need.actions for resource in need.resources)


def document(found: Iterable[Need]) -> dict[str, Any]:
    """One policy document: a statement per purpose (``sid``), its actions and resources merged."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for need in found:
        key = (need.sid, need.conditions, need.principals)
        statement = merged.setdefault(key, {"Sid": need.sid, "Effect": "Allow", "Action": [], "Resource": []})
        statement["Action"] += [action for action in need.actions if action not in statement["Action"]]
        statement["Resource"] += [arn for arn in need.resources if arn not in statement["Resource"]]
        if need.principals:
            statement["Principal"] = {"AWS": _one_or_many(list(need.principals))}
        if need.conditions:
            condition: dict[str, dict[str, Any]] = {}
            for one in need.conditions:
                condition.setdefault(one.operator, {})[one.key] = _one_or_many(list(one.values))
            statement["Condition"] = condition
    statements = []
    for statement in merged.values():
        statement["Action"] = _one_or_many(sorted(statement["Action"]))
        if statement["Resource"]:
            statement["Resource"] = _one_or_many(statement["Resource"])
        else:  # a trust policy: its role is its resource
            del statement["Resource"]
        statements.append(statement)
    return {"Version": VERSION, "Statement": statements}


def _one_or_many(values: list[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else values


__all__ = ["VERSION", "document", "documents"]
