"""``kinesis-batch package``'s bad input: one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinesis_batch import cli


@pytest.mark.processes  # pip resolves against the package index
def test_a_python_with_no_wheel_of_a_dependency_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out"
    code = cli.main(["package", "--python", "3.9", "--arch", "x86_64", "--output", str(output)])
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, err
    assert lines[-1].startswith("kinesis-batch: error: no wheel of ") and lines[-1].endswith(
        " for Python 3.9 on x86_64"
    ), err
    assert not output.exists()
