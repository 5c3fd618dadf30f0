"""A group of streams for the orchestrators' group tests: two that land, one whose output holds
another format's table (its runs fail), in a streams file of one group, ``small``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from tests.output.support import read_rows, sink_of
from tests.runs import assert_exactly_once, read_output
from tests.streams import StreamFactory, put


@dataclass(frozen=True)
class SmallGroup:
    path: Path  # the streams file
    plain: str  # parquet, in a folder of tmp_path
    table: str  # a Delta table
    broken: str  # its output holds a Delta table, but it is parquet's
    sent: dict[str, list[str]]  # what the two good ones were sent
    root: Path

    @property
    def streams(self) -> tuple[str, str, str]:
        return self.plain, self.table, self.broken

    def assert_landed_exactly_once(self) -> None:
        assert_exactly_once(read_output(self.root / "plain"), self.sent[self.plain])
        output = ("--format", "delta", "--output", str(self.root / "table"))
        rows = read_rows(sink_of(output, app=f"kinesis-batch-{self.table}", stream=self.table))
        assert_exactly_once(rows, self.sent[self.table])


def small_group(kinesis: Any, streams: StreamFactory, root: Path) -> SmallGroup:
    plain, table, broken = (streams.create(shards=2) for _ in range(3))
    sent = {plain: put(kinesis, plain, 40), table: put(kinesis, table, 30)}
    put(kinesis, broken, 5)
    write_deltalake(str(root / "theirs"), pa.table({"a": [1]}))  # not a parquet output's
    path = root / "streams.toml"
    path.write_text(
        f'[[streams]]\nstream = "{plain}"\noutput = "{root / "plain"}"\nread_limits = "none"\n\n'
        f'[[streams]]\nstream = "{table}"\noutput = "{root / "table"}"\nformat = "delta"\n\n'
        f'[[streams]]\nstream = "{broken}"\noutput = "{root / "theirs"}"\n\n'
        f'[[groups]]\nname = "small"\nstreams = ["{plain}", "{table}", "{broken}"]\nschedule = "@hourly"\n'
    )
    return SmallGroup(path, plain, table, broken, sent, root)
