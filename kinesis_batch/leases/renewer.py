"""Keep held leases alive while work runs: a background thread renewing at once, then every duration/3."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from kinesis_batch.errors import KinesisBatchError
from kinesis_batch.leases.manager import LeaseManager

log = logging.getLogger(__name__)


class LeaseRenewer:
    """``with LeaseRenewer(manager): ...`` renews the manager's leases until the block ends.

    A renewal that fails for a passing reason (throttling, an unreachable endpoint) is retried
    on the next tick; with ticks at a third of the lease duration, two can fail before a lease
    lapses. Leases lost to another worker are in ``manager.lost``; ``on_lost`` is told too
    (an exception from it is logged, and renewing goes on).
    """

    def __init__(
        self,
        manager: LeaseManager,
        *,
        interval: float | None = None,
        on_lost: Callable[[list[str]], object] | None = None,
    ) -> None:
        self.manager = manager
        self.interval = interval if interval is not None else manager.lease_duration / 3
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-renewer", daemon=True)
        self.errors: list[KinesisBatchError] = []

    def __enter__(self) -> LeaseRenewer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        # The first round at once: the leases may have aged since they were taken (an
        # orchestrator's task took them, and this one started a while later).
        while True:
            self._round()
            if self._stop.wait(self.interval):
                return

    def _round(self) -> None:
        lost_before = self.manager.lost_leases()
        try:
            lost = self.manager.renew()
        except KinesisBatchError as exc:
            # Kept, logged and retried next tick; a lease that lapses meanwhile shows up as lost.
            self.errors.append(exc)
            log.warning("lease renewal failed, retrying in %.1f s: %s", self.interval, exc)
            # The renewals that did go through in that round may have found leases lost.
            lost = sorted(self.manager.lost_leases() - lost_before)
        if lost:
            log.warning("lost leases: %s", ", ".join(lost))
            self._tell_lost(lost)

    def _tell_lost(self, lost: list[str]) -> None:
        if self._on_lost is None:
            return
        try:
            self._on_lost(lost)
        except Exception:
            # A failing callback must not stop the renewal of the leases still held.
            log.exception("on_lost callback failed for %s", ", ".join(lost))
