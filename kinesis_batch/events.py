"""What a run tells observers as it goes: each named step, in the order a run takes them.

==========  =====================================================================  ===========
step        what is true when it is told                                           where
==========  =====================================================================  ===========
prepared    the leases are taken and marked with the batch, its plan is written    driver
reading     a shard's first rows are written (the task is not finished)            Spark task
read        every task's files and results are in the batch's staging              driver
staged      the leases carry the read's ends and are still ours: publish is next   driver
table_published  (routed) the batch is in one more table, ``shard_id`` its route; the
            others follow in route order, then the dead-letter output
            (kinesis_batch.output.composite)                                       driver
dead_letters_published  (decoding, one table) the batch is in the dead-letter output,
            not yet in the table (kinesis_batch.output.composite)                  driver
published   the batch is in the output                                             driver
committed   the checkpoints moved                                                  driver
==========  =====================================================================  ===========

A maintenance run (kinesis_batch.maintenance) tells its own steps, with its maintenance id as
``batch_id``: ``compacting`` (a rewrite's new files are written, its commit is next),
``compacted`` (that commit landed), ``archived`` (the table's batch markers are archived),
``expired`` (old snapshots or versions dropped), ``orphans_found`` (found, not yet deleted),
``maintained`` (done, its report kept).

Observers are process-wide (:func:`observe`), like logging's handlers: whoever starts a run
(the command line, an Airflow task, a Dagster step) needs no way to pass them in. One
registered ``in_tasks`` is also shipped by the read to its Spark tasks, which tell it
``reading`` in the task's own process: it must pickle. An observer that raises an Exception is
logged and the run goes on; a BaseException (a test's simulated crash) ends the run as a crash
would. Nothing is observed unless someone registers an observer: production runs have none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

log = logging.getLogger(__name__)

TABLE_PUBLISHED = "table_published"
DEAD_LETTERS_PUBLISHED = "dead_letters_published"
RUN_STEPS = (
    "prepared",
    "reading",
    "read",
    "staged",
    TABLE_PUBLISHED,
    DEAD_LETTERS_PUBLISHED,
    "published",
    "committed",
)
MAINTENANCE_STEPS = ("compacting", "compacted", "archived", "expired", "orphans_found", "maintained")
STEPS = RUN_STEPS + MAINTENANCE_STEPS


@dataclass(frozen=True)
class Event:
    step: str  # one of STEPS
    batch_id: str
    shard_id: str | None = None  # the shard of a ``reading`` event
    stream: str | None = None  # the stream of a run's driver-side step (a group's runs share the observers)


Observer = Callable[[Event], None]
_observers: dict[Observer, bool] = {}  # observer -> shipped to the Spark tasks too


def observe(observer: Observer, *, in_tasks: bool = False) -> None:
    """Tell ``observer`` about every step of every run of this process from now on; with
    ``in_tasks`` about the steps inside the runs' Spark tasks too (it must pickle)."""
    _observers[observer] = in_tasks


def forget(observer: Observer) -> None:
    _observers.pop(observer, None)


@contextmanager
def observing(observer: Observer, *, in_tasks: bool = False) -> Iterator[None]:
    """``observe`` for the time of the block."""
    observe(observer, in_tasks=in_tasks)
    try:
        yield
    finally:
        forget(observer)


def task_observers() -> tuple[Observer, ...]:
    """The observers registered ``in_tasks`` now: what a read ships to its Spark tasks."""
    return tuple(observer for observer, in_tasks in _observers.items() if in_tasks)


def emit(event: Event, to: Iterable[Observer] | None = None) -> None:
    """Tell ``to`` (default: every registered observer) about ``event``, in order."""
    for observer in tuple(_observers if to is None else to):
        try:
            observer(event)
        except Exception:
            log.exception("an observer of %s failed", event)


__all__ = [
    "DEAD_LETTERS_PUBLISHED",
    "MAINTENANCE_STEPS",
    "RUN_STEPS",
    "STEPS",
    "TABLE_PUBLISHED",
    "Event",
    "Observer",
    "emit",
    "forget",
    "observe",
    "observing",
    "task_observers",
]
