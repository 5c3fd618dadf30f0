"""The deliberate faults stay applicable: each one's text stands once in its file, so `make
test-mutants` cannot quietly test nothing after the code moved."""

from __future__ import annotations

import pytest

from tests.mutants import MUTANTS, Mutant
from tests.mutants.__main__ import HERE, applied, verdict


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_mutant_changes_its_file_once_and_names_tests_that_exist(mutant: Mutant) -> None:
    source = (HERE / mutant.path).read_text()
    assert applied(source, mutant) != source
    assert all((HERE / test.split("::")[0]).exists() for test in mutant.tests)


def test_the_names_are_unique_and_a_mutant_that_no_longer_applies_says_so() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    with pytest.raises(ValueError, match="stands 0 times"):
        applied("", MUTANTS[0])
    assert [verdict(code) for code in (0, 1, 2)] == ["SURVIVED", "killed", "error (pytest exit 2)"]
