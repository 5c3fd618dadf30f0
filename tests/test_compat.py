"""make test-compat's lists of tests (tools/compat.sh) name tests that exist and contract sets that
exist: under pytest-xdist a node id that matches nothing runs no test and ends "no tests ran" (exit
5), which CI first heard of after an hour, when a fixture's parametrization had renamed the ids."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import CONTRACTS
from tests.runs import REPO

EVERY_LIST = '"${SPARK_TESTS[@]}" "${MWAA_TESTS[@]}" "$FRESH_UNDER_MWAA"'


def arguments() -> list[str]:
    """Every environment's pytest arguments at once (one collection takes about 15 s), printed by
    bash from tools/compat.sh's own definitions."""
    script = (REPO / "tools" / "compat.sh").read_text().splitlines()
    first = next(i for i, line in enumerate(script) if line.startswith("SPARK_TESTS="))
    last = next(i for i, line in enumerate(script) if line.startswith("FRESH_UNDER_MWAA="))
    definitions = "\n".join(script[first : last + 1])
    printed = subprocess.run(
        ["bash", "-c", f"{definitions}\nprintf '%s\\0' {EVERY_LIST}"], capture_output=True, text=True, check=True
    ).stdout
    return printed.rstrip("\0").split("\0")


def contract_sets(args: list[str]) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == "--contract"]


def test_every_contract_set_the_matrix_runs_is_one_there_is_and_each_is_run() -> None:
    script = (REPO / "tools" / "compat.sh").read_text()
    named = set(contract_sets(script.replace("(", " ").replace(")", " ").split()))
    assert named == set(CONTRACTS)


@pytest.mark.processes
def test_every_test_the_compatibility_matrix_names_is_collected() -> None:
    args = arguments()
    named = [arg for arg in args if "::" in arg]
    # The files carrying contract marks, not the whole tree: collecting it all takes a minute.
    files = (REPO / "tests").rglob("test_*.py")
    marked = sorted(str(path.relative_to(REPO)) for path in files if "mark.contract(" in path.read_text())
    every = [*marked, *(f"--contract={name}" for name in sorted(set(contract_sets(args)))), *named]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *every],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    ids = {line for line in collected.stdout.splitlines() if "::" in line}
    assert named and [node for node in named if node not in ids] == []
    assert len(ids) > len(named), "the contract sets hold tests too"
