"""``python -m tests.mutants [--repo DIR] [NAME...]``: apply each mutant (tests/mutants) to the
checkout DIR (this one by default) in turn, run its tests there with DIR's .venv, restore the file,
and print a table; exit 1 if any mutant's tests stayed green (or it no longer applies)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.mutants import MUTANTS, Mutant

HERE = Path(__file__).resolve().parents[2]


def applied(source: str, mutant: Mutant) -> str:
    """``source`` with the mutant's edit; ValueError unless its ``old`` stands there once."""
    found = source.count(mutant.old)
    if found != 1:
        raise ValueError(f"{mutant.name}: its text stands {found} times in {mutant.path}, not once")
    return source.replace(mutant.old, mutant.new)


def verdict(code: int) -> str:
    """pytest's exit code as the mutant's fate: 1 (tests failed) killed it."""
    return {0: "SURVIVED", 1: "killed"}.get(code, f"error (pytest exit {code})")


def run(repo: Path, mutant: Mutant) -> tuple[str, float]:
    path = repo / mutant.path
    original = path.read_text()
    try:
        mutated = applied(original, mutant)
    except ValueError as exc:
        return f"does not apply: {exc}", 0.0
    started = time.monotonic()
    path.write_text(mutated)
    try:
        # one process, so -x ends at the first failure with exit 1 (xdist's ends "interrupted", 2)
        command = [str(repo / ".venv/bin/python"), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        done = subprocess.run([*command, *mutant.tests], cwd=repo, capture_output=True, text=True)
    finally:
        path.write_text(original)
    return verdict(done.returncode), time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="the checkout to mutate (its .venv runs the tests)")
    parser.add_argument("names", nargs="*", help="only these mutants")
    args = parser.parse_args(argv)
    # a SIGTERM ends the run through run()'s finally, which puts the mutated file back
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    print(f"| mutant | its tests | {args.repo.resolve()} | seconds |\n|---|---|---|---:|", flush=True)
    survived = 0
    for mutant in chosen:
        fate, seconds = run(args.repo.resolve(), mutant)
        survived += fate != "killed"
        print(f"| {mutant.name} | {' '.join(mutant.tests)} | {fate} | {seconds:.0f} |", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} mutants killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
