"""A pytest plugin for tests/test_compat.py (`-p tests.contracts_listed`): at the end of collection
it prints each collected test's node id and its contract sets, one line each, tab-separated."""

from __future__ import annotations

import pytest

from tests.conftest import contract_sets


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        print(f"{item.nodeid}\t{','.join(sorted(contract_sets(item)))}")
