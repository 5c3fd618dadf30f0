"""``kinesis-batch iam-policy``: every principal's document of a stream's flags or of a streams
file's group, one principal's with --for, and one line for what cannot be printed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.runs import cli

WHERE = ("--account", "111122223333", "--region", "eu-west-1")


STREAM = ("--stream", "clicks", "--output", "s3://lake/c", "--format", "delta")


def test_a_streams_documents_by_principal_and_one_with_for() -> None:
    ran = cli("iam-policy", *STREAM, *WHERE)
    assert ran.returncode == 0, ran.stderr
    docs = json.loads(ran.stdout)
    assert list(docs) == ["worker", "executors"]
    alone = cli(
        "iam-policy", "--stream", "clicks", "--output", "s3://lake/c", "--format", "delta", *WHERE, "--for", "executors"
    )
    assert json.loads(alone.stdout) == docs["executors"]


def test_a_groups_documents_hold_every_stream_of_it(tmp_path: Path) -> None:
    path = tmp_path / "streams.toml"
    path.write_text(
        '[[streams]]\nstream = "a"\noutput = "s3://lake/a"\nformat = "delta"\n\n'
        '[[streams]]\nstream = "b"\noutput = "s3://lake/b"\nformat = "delta"\n\n'
        '[[streams]]\nstream = "c"\noutput = "/data/c"\n\n'
        '[[groups]]\nname = "g"\nstreams = ["a", "b"]\n'
    )
    ran = cli("iam-policy", "--streams-file", str(path), "--group", "g", "--for", "worker", *WHERE)
    assert ran.returncode == 0, ran.stderr
    (read,) = [s for s in json.loads(ran.stdout)["Statement"] if s["Sid"] == "ReadTheStream"]
    assert read["Resource"] == [f"arn:aws:kinesis:eu-west-1:111122223333:stream/{n}" for n in "ab"]


def test_a_document_the_settings_do_not_need_is_one_line() -> None:
    ran = cli("iam-policy", "--stream", "clicks", "--output", "/data/c", *WHERE, "--for", "reader")
    assert ran.returncode == 2
    assert ran.stderr.startswith("kinesis-batch: error: --for reader: these settings need no such document")
    kms = cli("iam-policy", "--stream", "clicks", "--output", "/data/c", *WHERE, "--for", "kms")
    assert kms.returncode == 2 and "no --kms-key given" in kms.stderr


def test_an_iceberg_catalog_nobody_configured_is_one_line() -> None:
    ran = cli("iam-policy", "--stream", "c", "--output", "a.c", "--format", "iceberg", "--catalog", "nope", *WHERE)
    assert ran.returncode == 2
    assert ran.stderr.startswith("kinesis-batch: error: --catalog nope: no such pyiceberg catalog")
