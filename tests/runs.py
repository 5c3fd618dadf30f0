"""Helpers for catch-up run tests: a stream with a reshard history, and reading output back."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from unittest.mock import patch

import pyarrow.dataset as ds

from tests.streams import merge, open_shards, put, split

REPO = Path(__file__).resolve().parents[1]


def diamond_stream(client: Any, name: str, per_phase: int, **putting: Any) -> list[str]:
    """3 shards; split the lowest; merge the other two; split a child and merge it back (a diamond).

    Records are put before and after each reshard, so every shard of the history holds data
    (``putting``: put's options, e.g. ``payload``). Returns the data of every record put, in put order.
    """
    sent = put(client, name, per_phase, **putting)
    low, mid, high = sorted(open_shards(client, name), key=lambda s: s.starting_hash_key)
    split(client, name, low)
    sent += put(client, name, per_phase, start=len(sent), **putting)
    merge(client, name, mid, high)
    sent += put(client, name, per_phase, start=len(sent), **putting)
    left, right = sorted(
        (s for s in open_shards(client, name) if s.parent_shard_id == low.shard_id), key=lambda s: s.starting_hash_key
    )
    merge(client, name, left, right)  # low -> (left, right) -> merged: the diamond
    sent += put(client, name, per_phase, start=len(sent), **putting)
    return sent


def read_output(root: Path) -> dict[str, list[Any]]:
    if not root.exists():
        return {}
    return ds.dataset(root, format="parquet", partitioning="hive").to_table().to_pydict()


def rows_of_keys(rows: dict[str, list[Any]], prefix: str) -> dict[str, list[Any]]:
    """The rows whose partition key starts with ``prefix``."""
    keep = [i for i, key in enumerate(rows.get("partition_key", [])) if key.startswith(prefix)]
    return {column: [values[i] for i in keep] for column, values in rows.items()}


def data_of(rows: dict[str, list[Any]]) -> list[str]:
    return [d.decode() for d in rows.get("data", [])]


def assert_exactly_once(rows: dict[str, list[Any]], sent: list[str]) -> None:
    counts = Counter(data_of(rows))
    duplicates = {d: n for d, n in counts.items() if n > 1}
    missing = set(sent) - set(counts)
    extra = set(counts) - set(sent)
    assert not duplicates, f"{len(duplicates)} records twice, e.g. {sorted(duplicates)[:5]}"
    assert not missing, f"{len(missing)} records missing, e.g. {sorted(missing)[:5]}"
    assert not extra, f"{len(extra)} unexpected records"


def assert_per_key_order(rows: dict[str, list[Any]]) -> None:
    """Ordering rows by (lineage_depth, int(sequence_number), sub_sequence_number) gives put order per key.

    The test data are integers put in increasing order, one PutRecords call at a time.
    """
    by_key: dict[str, list[tuple[int, int, int, int]]] = defaultdict(list)
    for key, depth, seq, sub, data in zip(
        rows["partition_key"],
        rows["lineage_depth"],
        rows["sequence_number"],
        rows["sub_sequence_number"],
        rows["data"],
        strict=True,
    ):
        by_key[key].append((depth, int(seq), sub, int(data)))
    for key, items in by_key.items():
        values = [v for *_, v in sorted(items)]
        assert values == sorted(values), f"order of key {key} not recovered"


@dataclass(frozen=True)
class Ran:
    """What a command said: its exit code and its output, as a process's would be."""

    returncode: int
    stdout: str
    stderr: str


def needs_spark() -> Any:
    raise AssertionError("this command reads with Spark: pass the worker's session, cli(..., spark=spark)")


def cli(*args: str, spark: Any = None, env: dict[str, str] | None = None) -> Ran:
    """``kinesis-batch ARGS`` through the ``main(argv)`` users run, in this worker: on the worker's
    one Spark session (``spark``) and endpoints, with ``env`` over the environment for the call.
    Every run nobody kills, stops or must isolate goes this way; those that do are
    :func:`cli_process`'s."""
    from kinesis_batch.cli import LOG_FORMAT, main

    out, err = io.StringIO(), io.StringIO()
    warnings = logging.StreamHandler(err)  # what the process's logging.basicConfig would print
    warnings.setFormatter(logging.Formatter(LOG_FORMAT))
    warnings.setLevel(logging.WARNING)
    logging.getLogger().addHandler(warnings)
    try:
        with patch.dict(os.environ, env or {}), redirect_stdout(out), redirect_stderr(err):
            code = main(list(args), spark=(lambda: spark) if spark is not None else needs_spark)
    finally:
        logging.getLogger().removeHandler(warnings)
    return Ran(code, out.getvalue(), err.getvalue())


def cli_process(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `kinesis-batch` as a process in its own process group, for a test that must isolate it
    (a fresh interpreter, a signal, a kill -9 of all of it): start one only for that."""
    return subprocess.run(
        [sys.executable, "-m", "kinesis_batch.cli", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
        cwd=REPO,
    )


def session_is_gone(sid: int, timeout: float = 10.0) -> bool:
    """True once no live process is left in the session ``sid`` (zombies waiting to be reaped do
    not count): a process group, and the groups its processes made of their own (pyspark's
    worker daemon and workers, dagster dev's servers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = subprocess.run(["ps", "-o", "stat=", "-s", str(sid)], capture_output=True, text=True).stdout.split()
        if all(state.startswith("Z") for state in states):
            return True
        time.sleep(0.2)
    return False


class Intruder:
    """``with Intruder(stream):`` another worker tries, every ``every`` seconds, to take the
    leases some run holds on ``stream`` (a worker that would take them the moment they lapse).
    ``taken``: what it got; ``tries_after_expiry``: its tries made after a held lease's first
    seen expiry, i.e. when the lease would have lapsed had nobody renewed it."""

    def __init__(self, stream: str, *, every: float = 0.5) -> None:
        from kinesis_batch import LeaseStore
        from kinesis_batch.aws import dynamodb_client
        from kinesis_batch.parsers import default_table

        self.store = LeaseStore(dynamodb_client(), default_table(stream))
        self.every = every
        self.taken: list[str] = []
        self.tries_after_expiry = 0
        self._first_expiry: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="intruder", daemon=True)

    def __enter__(self) -> Intruder:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            if not self.store.table_exists():
                continue
            held = [lease for lease in self.store.list_leases() if lease.lease_owner not in (None, "intruder")]
            for lease in held:
                self._first_expiry.setdefault(lease.lease_key, lease.expires_at_ms or 0)
            if not held:
                continue
            now_ms = int(time.time() * 1000)
            if any(now_ms > self._first_expiry[lease.lease_key] for lease in held):
                self.tries_after_expiry += 1
            # Each lease as seen held (same owner, same counter): one its holder released since
            # is free, not lapsed, and taking it would prove nothing.
            for lease in held:
                if not lease.is_live(now_ms) and self.store.take_lease(lease, "intruder", now_ms + 10_000):
                    self.taken.append(lease.lease_key)


class Thief:
    """``with Thief(dynamodb, stream, shard_id, ready=...):`` another worker ("thief") takes the
    shard's lease by force once ``ready()`` holds: a lease lost while a run works. ``took`` says
    whether it did; an error in its thread is raised on leaving the block."""

    def __init__(self, dynamodb: Any, stream: str, shard_id: str, *, ready: Callable[[], bool]) -> None:
        self.dynamodb, self.stream, self.shard_id, self.ready = dynamodb, stream, shard_id, ready
        self.took = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="thief", daemon=True)

    def __enter__(self) -> Thief:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._thread.join(timeout=5)
        if self._error is not None and kind is None:
            raise self._error

    def _run(self) -> None:
        from kinesis_batch import LeaseManager, LeaseStore
        from kinesis_batch.parsers import default_table

        try:
            while not self.ready():
                time.sleep(0.05)
            thief = LeaseManager(LeaseStore(self.dynamodb, default_table(self.stream)), "thief", 60)
            self.took = bool(thief.take([self.shard_id], force=True).acquired)
        except BaseException as exc:  # handed to the test's thread in __exit__
            self._error = exc
