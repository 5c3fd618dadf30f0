"""Pure: the IAM policy documents of a deployment, one per principal, from what its streams'
runs need (kinesis_batch.access.needs): statements of the same purpose merged, every resource
an ARN the settings name, ``"*"`` only where the action has no resource type (CloudWatch's
PutMetricData, held to the namespace by a condition) or in a resource policy (a key policy's
``"*"`` is that key)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
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
    """One policy document: a statement per purpose (``sid``), its actions and resources merged.
    Needs of one purpose whose conditions differ only in their values on the same actions and
    resources (two prefixes of one bucket) are one statement listing every value; any that stay
    apart (other buckets) are numbered, since a document's Sids are unique."""
    by_conditions: dict[tuple[Any, ...], _Statement] = {}
    for need in found:
        key = (need.sid, need.conditions, need.principals)
        merged = by_conditions.setdefault(key, _Statement(need.sid, need.principals))
        merged.actions += [action for action in need.actions if action not in merged.actions]
        merged.resources += [arn for arn in need.resources if arn not in merged.resources]
        for one in need.conditions:
            merged.conditions.setdefault((one.operator, one.key), []).extend(one.values)
    by_shape: dict[tuple[Any, ...], _Statement] = {}
    for statement in by_conditions.values():
        shape = (statement.sid, statement.principals, tuple(sorted(statement.actions)), tuple(statement.resources),
                 tuple(statement.conditions))  # fmt: skip
        into = by_shape.setdefault(shape, statement)
        if into is not statement:
            for condition, values in statement.conditions.items():
                into.conditions[condition] += [value for value in values if value not in into.conditions[condition]]
    seen: dict[str, int] = {}
    statements = []
    for statement in by_shape.values():
        seen[statement.sid] = seen.get(statement.sid, 0) + 1
        sid = statement.sid if seen[statement.sid] == 1 else f"{statement.sid}{seen[statement.sid]}"
        statements.append(statement.rendered(sid))
    return {"Version": VERSION, "Statement": statements}


@dataclass
class _Statement:
    sid: str
    principals: tuple[str, ...]
    actions: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    conditions: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def rendered(self, sid: str) -> dict[str, Any]:
        statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": _one_or_many(sorted(self.actions))}
        if self.resources:
            statement["Resource"] = _one_or_many(self.resources)
        # else a trust policy: its role is its resource
        if self.principals:
            statement["Principal"] = {"AWS": _one_or_many(list(self.principals))}
        if self.conditions:
            condition: dict[str, dict[str, Any]] = {}
            for (operator, key), values in self.conditions.items():
                condition.setdefault(operator, {})[key] = _one_or_many(values)
            statement["Condition"] = condition
        return statement


def _one_or_many(values: list[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else values


__all__ = ["VERSION", "document", "documents"]
