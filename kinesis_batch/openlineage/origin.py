"""Where a kinesis-batch run comes from, as OpenLineage says it (pure): the run it is a child
of and the root of their tree, and the source code that defines it, where known.

Who drives a run names it: an Airflow task (the provider's ``lineage_*`` macros: its
namespace, ``DAG.TASK`` and its try's run id; the DAG run as the root), a Dagster run (itself
the root), or, from the command line, the standard variables the OpenLineage integrations
read (dbt's, and what the Airflow provider's macros are made to fill):

- ``OPENLINEAGE_PARENT_ID``: ``NAMESPACE/JOB/RUN_ID`` of the parent run;
- ``OPENLINEAGE_ROOT_PARENT_ID``: the same of the root (absent: the parent is the root).

A lineage tool then draws the run under its parent (the ``parent`` run facet). The source code
location (``sourceCodeLocation`` job facet) is the file that defines the job when the adapter
knows one: an Airflow DAG's file.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kinesis_batch.errors import IllegalArgumentError

PARENT_ID = "OPENLINEAGE_PARENT_ID"
ROOT_PARENT_ID = "OPENLINEAGE_ROOT_PARENT_ID"


@dataclass(frozen=True)
class RunRef:
    """One OpenLineage run: its job's namespace and name, and its UUID."""

    namespace: str
    name: str
    run_id: str

    def __post_init__(self) -> None:
        if not self.namespace or not self.name:
            raise IllegalArgumentError(f"{self.id!r}: an OpenLineage run needs a namespace and a job name")
        try:
            uuid.UUID(self.run_id)
        except ValueError:
            raise IllegalArgumentError(f"{self.id!r}: {self.run_id!r} is not an OpenLineage run id (a UUID)") from None

    @property
    def id(self) -> str:
        """``NAMESPACE/JOB/RUN_ID``, as the variables and the provider's macros spell it."""
        return f"{self.namespace}/{self.name}/{self.run_id}"

    @classmethod
    def parse(cls, value: str, *, name: str = PARENT_ID) -> RunRef:
        parts = value.split("/")
        if len(parts) != 3:
            raise IllegalArgumentError(f"{name}: {value!r} is not NAMESPACE/JOB/RUN_ID")
        return cls(*parts)


@dataclass(frozen=True)
class ParentRun:
    """The run that started this one (``parent``) and the root of both (``root``)."""

    parent: RunRef
    root: RunRef

    @classmethod
    def of(cls, parent: RunRef, root: RunRef | None = None) -> ParentRun:
        return cls(parent, root or parent)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ParentRun | None:
        """From ``OPENLINEAGE_PARENT_ID`` (and ``OPENLINEAGE_ROOT_PARENT_ID``); None when unset.
        IllegalArgumentError when they do not parse."""
        parent = environ.get(PARENT_ID, "")
        if not parent:
            return None
        root = environ.get(ROOT_PARENT_ID, "")
        return cls.of(RunRef.parse(parent), RunRef.parse(root, name=ROOT_PARENT_ID) if root else None)

    def environ(self) -> dict[str, str]:
        """The variables that make this the parent of a run started with them (a spark-submit,
        another kinesis-batch command)."""
        return {PARENT_ID: self.parent.id, ROOT_PARENT_ID: self.root.id}


@dataclass(frozen=True)
class Origin:
    """Who drives a run: its ``parent`` (None: a run of its own) and the URL of the ``source``
    that defines it (None: not known)."""

    parent: ParentRun | None = None
    source: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Origin:
        """A command line's: its parent from the standard variables (:meth:`ParentRun.from_environ`)."""
        return cls(ParentRun.from_environ(environ))


#: A run no one drives: no parent, no source known.
ALONE = Origin()

__all__ = ["ALONE", "PARENT_ID", "ROOT_PARENT_ID", "Origin", "ParentRun", "RunRef"]
