"""What a loaded Delta table's log can still say after the load. deltalake reads parts of the
log lazily (the app transactions, when asked), so a clean-up of old log files that lands in
between (maintenance's, after its checkpoint) makes that read fail with the file gone. That is
the table having moved since the load: the publish and discard loops reload and decide again,
as after a commit that lost its race, and a look-up (what is published, the layout, the files)
loads again (TableSink._reading, kinesis_batch.output.tables). A load itself can meet it too:
it lists the log, then reads what it listed."""

from __future__ import annotations


class CleanedLogMoves:
    """A Delta sink's answer to :meth:`TableSink._moved_under`: a log file gone under the loaded
    table is the table having moved."""

    def _moved_under(self, exc: Exception) -> bool:
        return log_gone(exc)


def log_gone(exc: BaseException | None) -> bool:
    """``exc``, or the deltalake error it was translated from (``raise ... from``), says a log
    file the loaded table reads is no longer there."""
    from deltalake.exceptions import DeltaError

    while exc is not None:
        text = str(exc).lower()
        # Two wordings of it: a log file not found, or a version whose commit entry is gone
        # (deltalake's InvalidVersion, met by a commit's conflict check after a log clean-up).
        # On S3 deltalake raises object_store's NotFound as Python's FileNotFoundError.
        if isinstance(exc, DeltaError | FileNotFoundError) and (
            ("_delta_log/" in text and "not found" in text) or "invalid table version" in text
        ):
            return True
        exc = exc.__cause__
    return False


__all__ = ["CleanedLogMoves", "log_gone"]
