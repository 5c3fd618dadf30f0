"""What a loaded Delta table's log can still say after the load. deltalake reads parts of the
log lazily (the app transactions, when asked), so a clean-up of old log files that lands in
between (maintenance's, after its checkpoint) makes that read fail with the file gone. That is
the table having moved since the load: the caller reloads and decides again, as after a commit
that lost its race (kinesis_batch.output.tables)."""

from __future__ import annotations

from typing import Any


class CleanedLogMoves:
    """A Delta sink's answer to :meth:`TableSink._moved_under`: a log file gone under the loaded
    table is the table having moved."""

    def _moved_under(self, exc: Exception) -> bool:
        return log_gone(exc)


def next_number(table: Any, consumer_app_id: str) -> int | None:
    """The consumer's next batch number (its app transaction's version, plus one); None when
    the log ``table`` was loaded from is gone (reload)."""
    try:
        return int(table.transaction_version(consumer_app_id) or 0) + 1
    except Exception as exc:
        if log_gone(exc):
            return None
        raise


def log_gone(exc: BaseException) -> bool:
    """``exc`` says a log file the loaded table reads is no longer there."""
    from deltalake.exceptions import DeltaError

    text = str(exc)
    return isinstance(exc, DeltaError) and "_delta_log/" in text and "not found" in text.lower()


__all__ = ["CleanedLogMoves", "log_gone", "next_number"]
