"""A call made now, or ahead in a thread of its own while the caller does something else."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Ahead:
    """``call(*args)``: when ``result()`` asks for it, or (``ahead``) at once in a daemon thread.
    ``result()`` returns its value or re-raises what it raised. A daemon thread, so work
    abandoned mid-way never holds up the interpreter's exit."""

    def __init__(self, call: Callable[..., Any], *args: Any, ahead: bool) -> None:
        self._call, self._args = call, args
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if ahead:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._call(*self._args)
        except BaseException as exc:  # handed to the caller's thread by result()
            self._error = exc
        self._done = True

    def result(self) -> Any:
        if self._thread is not None:
            self._thread.join()
        elif not self._done:
            self._run()
        if self._error is not None:
            raise self._error
        return self._value
