"""The run configuration of a stream's jobs, as the Launchpad shows it.

No ``from __future__ import annotations`` here: Dagster reads these annotations at runtime, and
string annotations leave its Config classes unresolved. Values Dagster's config types can
express (types, the format's choices, required fields) are refused at launch; the rest (a
start position, a time) by the library when the step starts, with its one-line message and
before anything is created.
"""

from enum import Enum
from typing import Optional

import dagster as dg
from pydantic import Field

from kinesis_batch import defaults
from kinesis_batch.output.formats import FORMATS

#: The output formats (kinesis_batch.output.formats), as the Launchpad offers them.
Format = Enum("Format", {format: format for format in FORMATS})  # type: ignore[misc]


class CatchUpConfig(dg.Config):
    """One catch-up run of the stream: from its checkpoints up to ``read_bound``."""

    read_bound: Optional[str] = Field(  # noqa: UP045 (Dagster's config schema wants Optional)
        default=None,
        description="ISO 8601 time with a zone: read records that arrived up to then. The hourly "
        "schedule passes its tick's time; empty: now.",
    )
    allow_gaps: bool = Field(
        default=False, description="go on when retention trimmed past a checkpoint (the gap is recorded)"
    )


class BackfillConfig(dg.Config):
    """Read the stream again from an older position, as the Airflow backfill form does."""

    shards: list[str] = Field(default=[], description="shard ids to read again; empty: all")
    start: str = Field(
        default=defaults.BACKFILL_START,
        description="trim_horizon | at_timestamp=ISO8601 | run=RUN_ID (the checkpoints before that "
        "run, from the history) | after_sequence=NUMBER (one shard)",
    )
    end: Optional[str] = Field(  # noqa: UP045
        default=None, description="ISO 8601 arrival time to stop at; empty: the tip"
    )
    format: Optional[Format] = Field(  # noqa: UP045
        default=None, description="parquet | delta | iceberg; empty: the main output's"
    )
    output: Optional[str] = Field(  # noqa: UP045
        default=None,
        description="empty: a table of the backfill's own next to the main output; else a folder, "
        "a table path or s3:// URI, or NAMESPACE.TABLE",
    )
    catalog: Optional[str] = Field(default=None, description="iceberg: a pyiceberg catalog name")  # noqa: UP045
    move_main_checkpoints: bool = Field(
        default=False,
        description="read with the main lease table and move its checkpoints (default: a table of "
        "the backfill's own, which never conflicts with the hourly run)",
    )
