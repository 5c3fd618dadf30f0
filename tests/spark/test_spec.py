"""A task's work crosses to its Python worker as JSON, with what the worker cannot learn from
its own environment: here, the driver's choice of how GetRecords pages are parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinesis_batch.aws import kinesis_client
from kinesis_batch.config import RunConfig
from kinesis_batch.shards.page import READER_ENV
from kinesis_batch.spark.spec import GroupSpec
from kinesis_batch.spark.targets import RouteTargets
from kinesis_batch.storage.layout import FileLayout
from kinesis_batch.storage.place import Place


@pytest.mark.parametrize(("environ", "expected"), [(None, "fast"), ("botocore", "botocore"), ("fast", "fast")])
def test_the_drivers_choice_of_page_parse_travels_in_the_spec(
    environ: str | None, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if environ is None:
        monkeypatch.delenv(READER_ENV, raising=False)
    else:
        monkeypatch.setenv(READER_ENV, environ)
    config = RunConfig.of(stream="s", output=str(tmp_path), read_limits="none")
    spec = GroupSpec.of(
        config, kinesis_client(), (), None, RouteTargets.single(Place(str(tmp_path)), FileLayout()), batch_id="b1"
    )

    monkeypatch.setenv(READER_ENV, "fast")  # the worker's own environment does not decide
    assert GroupSpec.from_json(spec.to_json()).reader == expected
