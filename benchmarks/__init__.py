"""The benchmarks: one command each (``python -m benchmarks.NAME``, from the checkout), printing
figures. They run on the checkout's dev tools (``tools/devkit``, never shipped), which this puts
on the path."""

import sys
from pathlib import Path

_TOOLS = str(Path(__file__).resolve().parents[1] / "tools")
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)
