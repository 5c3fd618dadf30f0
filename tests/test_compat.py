"""make test-compat's lists of tests (tools/compat.sh) name tests that exist and contract sets that
exist: under pytest-xdist a node id that matches nothing runs no test and ends "no tests ran" (exit
5), which CI first heard of after an hour, when a fixture's parametrization had renamed the ids."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import CONTRACTS
from tests.runs import REPO

ENVIRONMENTS = {
    "spark-3.5.0": "SPARK_3_TESTS",
    "spark-4.0": "SPARK_4_TESTS",
    "mwaa-3.3.1": "MWAA_TESTS",
    "py3.13": "PY313_TESTS",
}


def environments() -> dict[str, list[str]]:
    """Each environment's pytest arguments, printed by bash from tools/compat.sh's own definitions."""
    script = (REPO / "tools" / "compat.sh").read_text().splitlines()
    first = next(i for i, line in enumerate(script) if line.startswith("FRESH="))
    last = next(i for i, line in enumerate(script) if line.startswith("PY313_TESTS="))
    definitions = "\n".join(script[first : last + 1])
    printed = {}
    for name, array in ENVIRONMENTS.items():
        out = subprocess.run(
            ["bash", "-c", f"{definitions}\nprintf '%s\\0' \"${{{array}[@]}}\""],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        printed[name] = out.rstrip("\0").split("\0")
    return printed


def contract_sets(args: list[str]) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == "--contract"]


def test_every_contract_set_the_matrix_runs_is_one_there_is_and_each_is_run() -> None:
    named = {name for args in environments().values() for name in contract_sets(args)}
    assert named == set(CONTRACTS)
    script = (REPO / "tools" / "compat.sh").read_text()
    assert all(f'"${{{array}[@]}}"' in script for array in ENVIRONMENTS.values()), "each list is run"


@pytest.mark.processes
def test_each_environment_selects_tests_of_every_set_it_names_and_every_test_it_names_by_id() -> None:
    """One collection of the files carrying contract marks (the whole tree takes a minute), then
    each environment's own --ignore, sets and ids applied to it: an environment whose ignores
    empty one of its sets would run no test of it (py3.13 once ran none at all)."""
    every = environments()
    named = sorted({arg for args in every.values() for arg in args if "::" in arg})
    files = (REPO / "tests").rglob("test_*.py")
    marked = sorted(str(path.relative_to(REPO)) for path in files if "mark.contract(" in path.read_text())
    sets = sorted({name for args in every.values() for name in contract_sets(args)})
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.contracts_listed",
            *marked,
            *(f"--contract={name}" for name in sets),
            *named,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    listed = dict(line.split("\t") for line in collected.stdout.splitlines() if "\t" in line)
    for name, args in every.items():
        ignored = tuple(arg.removeprefix("--ignore=") for arg in args if arg.startswith("--ignore="))
        here = {node: held.split(",") for node, held in listed.items() if not node.startswith(ignored)}
        empty = [wanted for wanted in contract_sets(args) if not any(wanted in held for held in here.values())]
        missing = [arg for arg in args if "::" in arg and arg not in here]
        assert (empty, missing) == ([], []), f"{name}: sets that select nothing, ids not collected"
