"""Swap two folders in one step: Linux's ``renameat2(RENAME_EXCHANGE)``, which local file systems
(ext4, XFS, btrfs, tmpfs) support. A reader that lists either path sees the old folder or the
new one, never neither: what lets a parquet batch folder be replaced by its compacted copy
while readers read it (two renames would leave a moment with the batch missing).

Where there is no such call (another OS, an older C library, a file system without it),
:func:`supported` says so and the caller skips the work in one line.
"""

from __future__ import annotations

import ctypes
import errno
import os
import tempfile
from pathlib import Path
from typing import Any

AT_FDCWD = -100
RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP}


def exchange(first: Path, second: Path) -> None:
    """Swap ``first`` and ``second`` (both must exist) atomically; OSError if the system cannot."""
    call = _renameat2()
    if call is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available here")
    if call(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot exchange {first} and {second}: {os.strerror(code)}")


def supported(folder: Path) -> bool:
    """Whether folders in ``folder`` can be exchanged (tried on two empty ones)."""
    if _renameat2() is None:
        return False
    with tempfile.TemporaryDirectory(prefix=".exchange-", dir=folder) as probe:
        first, second = Path(probe, "a"), Path(probe, "b")
        first.mkdir()
        second.mkdir()
        try:
            exchange(first, second)
        except OSError as exc:
            if exc.errno in _UNSUPPORTED:
                return False
            raise
    return True


def _renameat2() -> Any:
    """The C library's renameat2, or None where it has none."""
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


__all__ = ["exchange", "supported"]
