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


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line of a package command refused before anything was resolved (none printed)."""
    code = cli.main(["package", "--python", "3.11", "--arch", "x86_64", *argv])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert "resolving wheels" not in err, "refused before the build"
    (line,) = err.strip().splitlines()
    return line.removeprefix("kinesis-batch: error: ")


def test_an_archives_name_as_the_output_is_refused_before_the_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = _refused(capsys, "--output", str(tmp_path / "env.tar.gz"))
    assert said.startswith(f"--output {tmp_path / 'env.tar.gz'}: name the folder or s3:// prefix the archive goes in")
    assert not (tmp_path / "env.tar.gz").exists()


def test_an_archive_already_there_is_not_replaced_silently(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.metadata

    there = tmp_path / f"kinesis-batch-{importlib.metadata.version('kinesis-batch')}-py3.11-x86_64.tar.gz"
    there.write_bytes(b"the archive job runs read")
    said = _refused(capsys, "--output", str(tmp_path))
    assert said == f"{there} exists (job runs may be reading it): --replace writes it again"
    assert there.read_bytes() == b"the archive job runs read"


@pytest.mark.processes  # moto's S3
def test_a_missing_bucket_is_one_line_and_exit_2_before_the_build(capsys: pytest.CaptureFixture[str]) -> None:
    said = _refused(capsys, "--output", "s3://no-such-bucket-kb/envs")
    assert (
        said
        == "--output s3://no-such-bucket-kb/envs: bucket no-such-bucket-kb does not exist (or is not visible to us)"
    )
