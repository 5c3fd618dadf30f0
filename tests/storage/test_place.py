"""A Place stores bytes as given, on a local file system and on S3 (moto): a name's suffix never
makes pyarrow compress or inflate them (an archive ``package`` uploads is gzipped already)."""

from __future__ import annotations

import gzip
from pathlib import Path

import boto3
import pytest

from kinesis_batch.aws import s3_settings
from kinesis_batch.storage.place import Place
from tests.output.support import make_bucket

#: Names pyarrow would otherwise take for compressed streams, and one it would not.
NAMES = ["environment.tar.gz", "notes.txt.gz", "frames.zst", "block.bz2", "plain.bin"]


#: A local folder, and a prefix of moto's S3 (a process: not in make check).
WHERE = ["local", pytest.param("s3", marks=pytest.mark.processes)]


def _place(tmp_path: Path, where: str) -> Place:
    return Place(str(tmp_path / "place")) if where == "local" else Place(f"s3://{make_bucket()}/prefix", s3_settings())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("where", WHERE)
def test_a_part_is_stored_byte_for_byte_whatever_its_name(tmp_path: Path, where: str, name: str) -> None:
    place = _place(tmp_path, where)
    place.make_dirs()
    payload = gzip.compress(b"five!") if name.endswith(".gz") else b"five!"

    with place.open_part(name) as stream:
        stream.write(payload)

    if where == "s3":
        bucket, _, prefix = place.path.partition("/")
        stored = boto3.client("s3").get_object(Bucket=bucket, Key=f"{prefix}/{name}")["Body"].read()
    else:
        stored = (tmp_path / "place" / name).read_bytes()
    assert stored == payload
    if name.endswith(".gz"):
        assert gzip.decompress(stored) == b"five!", "gzipped once, not twice"


@pytest.mark.parametrize("where", WHERE)
def test_text_under_a_compressed_name_reads_back_as_written(tmp_path: Path, where: str) -> None:
    place = _place(tmp_path, where)

    place.write_text("state.json.gz", '{"a": 1}')

    assert place.read_text("state.json.gz") == '{"a": 1}'
    assert place.sizes() == {"state.json.gz": len('{"a": 1}')}
