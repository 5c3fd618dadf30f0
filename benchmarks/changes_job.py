"""The users' second job of benchmarks.changes_runs, as the process it is on their side: it reads
one batch of change records from the raw landing that a ``kinesis-batch run`` appended (the
batch id the run reported, as an orchestrator passes it on), parses them, keeps each key's
newest change and merges them into its own table (benchmarks.changes_theirs).

    python -m benchmarks.changes_job BATCH_ID LANDING_ARGS -- TABLE_ARGS

Both argument lists are benchmarks.common.output_args'. Prints ``{"changes": N, "job_seconds": S}``,
S from after the imports to the merge's commit.
"""

from __future__ import annotations

import json
import sys
import time

import pyarrow as pa

from benchmarks.changes_theirs import Theirs, parsed


def landed(args: tuple[str, ...], batch_id: str) -> pa.Table:
    """The ``data`` of the landing's rows of ``batch_id``."""
    landing = Theirs(args)  # only for its format, catalog and storage options
    if landing.format == "delta":
        from deltalake import DeltaTable

        table = DeltaTable(landing.target, storage_options=landing.storage_options())
        return table.to_pyarrow_table(columns=["data"], filters=[("batch_id", "=", batch_id)])
    from pyiceberg.expressions import EqualTo

    iceberg = landing.catalog.load_table(landing.target)
    return iceberg.scan(row_filter=EqualTo("batch_id", batch_id), selected_fields=("data",)).to_arrow()


def main(argv: list[str]) -> int:
    batch_id, *rest = argv
    split = rest.index("--")
    started = time.monotonic()
    raw = landed(tuple(rest[:split]), batch_id)
    Theirs(tuple(rest[split + 1 :])).merge(parsed(raw))
    print(json.dumps({"changes": raw.num_rows, "job_seconds": time.monotonic() - started}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
