"""A backfill's plan, from the main consumer's run configuration: its lease table (the main one
when it moves the main checkpoints), its output (named, else next to the main output), its bound,
and the run configuration it reads with. Pure: names in, names out."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from kinesis_batch.config import KEEP, NONE, RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output import Output
from kinesis_batch.output.formats import format_of


@dataclass(frozen=True)
class Backfill:
    """Where a backfill reads to and writes: its lease table, its output, its bound (None: the
    tip), and the lease table whose checkpoints it starts from."""

    table: str
    output: str
    until: datetime | None
    moves_main_checkpoints: bool
    main_table: str


def backfill_table(main_table: str, backfill_id: str) -> str:
    return f"{main_table}-backfill-{backfill_id}"[:255]


def backfill_output(main: Output, format: str, backfill_id: str) -> str:
    """A backfill's own table next to the main one, when the backfill names none, as its
    format's row says (kinesis_batch.output.formats: parquet ``ROOT-backfill-ID``, delta
    ``URI_backfill_ID``, iceberg ``NAMESPACE.TABLE_backfill_ID``). The backfill must be in the
    main output's format to derive one."""
    if format != main.format:
        raise IllegalArgumentError(
            f"output: a {format} backfill needs its output named (the main output {main.output} is {main.format})"
        )
    return format_of(format).backfill(main.output, backfill_id)


def plan_backfill(
    main: RunConfig,
    backfill_id: str,
    *,
    format: str = "",
    output: str = "",
    catalog: str | None = None,
    until: datetime | None = None,
    move_main_checkpoints: bool = False,
) -> tuple[RunConfig, Backfill]:
    """The backfill ``backfill_id`` of ``main``'s stream, in ``format`` (default: the main
    output's) into ``output`` (default: next to the main output), up to ``until`` (None: the tip).
    Its run configuration keeps the main one's settings otherwise. Unless it moves the main
    checkpoints, it reads with a lease table of its own; the main table keeps its own output."""
    format = format or main.format
    plan = Backfill(
        table=main.table if move_main_checkpoints else backfill_table(main.table, backfill_id),
        output=output or backfill_output(main.destination, format, backfill_id),
        until=until,
        moves_main_checkpoints=move_main_checkpoints,
        main_table=main.table,
    )
    if catalog is None and format == main.format:
        catalog = main.catalog
    settings = replace(main.settings, format=format, output=plan.output, catalog=catalog or "", table=plan.table)
    binding = NONE if move_main_checkpoints else KEEP
    return replace(main, settings=settings, until=until, output_binding=binding), plan


__all__ = ["Backfill", "backfill_output", "backfill_table", "plan_backfill"]
