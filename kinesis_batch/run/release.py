"""Step 7, release: the teardown, also after a failure. An unpublished batch is discarded
(fenced: a task of this run still alive somewhere must not publish it later) and its markers
cleared; every lease this run holds is released. What a failure leaves behind here (a lease
another worker took meanwhile, an endpoint that is down) is settled by the next run's recovery.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from kinesis_batch import ownership
from kinesis_batch.errors import ForeignTableError, KinesisBatchError, StreamRecreatedError
from kinesis_batch.run.context import RunContext

log = logging.getLogger(__name__)


def finish(context: RunContext) -> list[str]:
    """Returns the keys released."""
    if context.claim is None:  # a step of its own, or a start that failed: is anything of the table ours?
        if not context.store.table_exists():
            return []  # the run failed before it created or leased anything
        try:
            ownership.check(context.kinesis, context.store, context.config.stream_id)
        except (ForeignTableError, StreamRecreatedError):
            return []  # refused at its start: nothing of that table is this run's
    manager, batch_id = context.manager, context.run_id
    manager.adopt()
    try:
        if context.output.committed(batch_id) is None:
            context.output.discard(batch_id)
            for key in sorted(manager.held()):
                try:
                    with manager.fenced(key) as settle:
                        settle(context.checkpoints.abort(manager.lease(key), batch_id))
                except KinesisBatchError as exc:  # recovery by the next run clears what is left
                    log.warning("could not clear pending batch %s on %s: %s", batch_id, key, exc)
    except BaseException:
        # The batch could not be settled (its roll-forward or discard failed): the next run's
        # recovery settles it from the pending marks, which a released lease keeps. Holding the
        # leases would only make every run until they lapse skip the shards.
        manager.release()
        raise
    return manager.release()


@contextmanager
def after_failure() -> Iterator[None]:
    """Around the teardown after a step failed: the step's error is the one to report (and
    raised on), so a failure of the teardown itself is logged beside it, whatever its kind."""
    try:
        yield
    except Exception as exc:
        log.warning("teardown after a failed run also failed: %s: %s", type(exc).__name__, exc)


__all__ = ["after_failure", "finish"]
