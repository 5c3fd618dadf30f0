"""The pace a reader keeps on one shard, and the command line's syntax for it (values, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from kinesis_batch.errors import IllegalArgumentError

MIB = 1024 * 1024
MAX_RECORDS_PER_CALL = 10_000  # GetRecords' own limit


@dataclass(frozen=True)
class ReadLimits:
    """The pace one reader keeps on one shard (Kinesis: 5 calls/s and 2 MiB/s per shard,
    shared by every polling consumer of the stream). ``None`` switches a limit off."""

    calls_per_second: float | None = 5.0
    bytes_per_second: float | None = 2 * MIB
    records_per_call: int = MAX_RECORDS_PER_CALL

    def __post_init__(self) -> None:
        for name in ("calls_per_second", "bytes_per_second"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise IllegalArgumentError(f"{name} must be a positive number or None (no limit), not {value!r}")
        records = self.records_per_call
        if isinstance(records, bool) or not isinstance(records, int) or not 1 <= records <= MAX_RECORDS_PER_CALL:
            raise IllegalArgumentError(f"records_per_call must be 1..{MAX_RECORDS_PER_CALL}, not {records!r}")

    @classmethod
    def unlimited(cls) -> ReadLimits:
        """For emulators, which have no limits to respect."""
        return cls(calls_per_second=None, bytes_per_second=None)

    @classmethod
    def parse(cls, text: str) -> ReadLimits:
        """``--read-limits``: ``kinesis`` (AWS's per-shard limits), ``none``, or
        ``CALLS,BYTES``: calls and bytes per second per shard, e.g. to leave half of each shard
        to another consumer (``2.5,1048576``)."""
        if text == "kinesis":
            return cls()
        if text == "none":
            return cls.unlimited()
        calls, _, size = text.partition(",")
        try:
            return cls(calls_per_second=float(calls), bytes_per_second=float(size))
        except ValueError:
            raise IllegalArgumentError(
                f"--read-limits {text!r}: use kinesis, none, or CALLS,BYTES per second per shard (e.g. 5,2097152)"
            ) from None

    def to_arg(self) -> str:
        """The ``--read-limits`` value that parses back to these limits (per-call records aside)."""
        if self == ReadLimits():
            return "kinesis"
        if self.calls_per_second is None and self.bytes_per_second is None:
            return "none"
        return f"{self.calls_per_second:g},{self.bytes_per_second:g}"

    def pause_after(self, response_bytes: int) -> float:
        """Seconds between the start of one call and the next, given the last response size."""
        pause = 0.0
        if self.calls_per_second:
            pause = 1.0 / self.calls_per_second
        if self.bytes_per_second:
            pause = max(pause, response_bytes / self.bytes_per_second)
        return pause


__all__ = ["MAX_RECORDS_PER_CALL", "MIB", "ReadLimits"]
