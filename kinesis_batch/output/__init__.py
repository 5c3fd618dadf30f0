"""Output: the sinks a batch is published to, one module per format, behind one interface
(:class:`~kinesis_batch.output.sink.Sink`). The run's steps, recovery and the status views use
that interface only; :class:`Output` names an output and is where a format's name becomes its
sink."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kinesis_batch import defaults
from kinesis_batch.aws import S3Settings
from kinesis_batch.changes.settings import ChangeSettings
from kinesis_batch.decoding.settings import DecodeSettings
from kinesis_batch.errors import InvalidStateError
from kinesis_batch.output.catalogs import DEFAULT_CATALOG
from kinesis_batch.output.changes import Merge
from kinesis_batch.output.formats import FORMATS, format_of, validate_output
from kinesis_batch.output.sink import Sink, Stored
from kinesis_batch.routing.routes import ROUTE, SINGLE, table_of
from kinesis_batch.storage.place import is_s3
from kinesis_batch.storage.records import CommitRecord, ShardCommit

if TYPE_CHECKING:
    from kinesis_batch.output.composite import RunSink

DEAD_LETTER_SUFFIX = "_dead_letter"


@dataclass(frozen=True)
class Output:
    """Where batches go: a format, its output (folder, table path or URI, NAMESPACE.TABLE) and,
    for iceberg, a pyiceberg catalog name (None: ``default``, or the embedded one). Checked
    when made: a combination that cannot work raises IllegalArgumentError in one line."""

    format: str = defaults.FORMAT
    output: str = defaults.OUTPUT
    catalog: str | None = None

    def __post_init__(self) -> None:
        validate_output(self.format, self.output, self.catalog)

    @property
    def asset_uri(self) -> str:
        """The output as an asset (Airflow's Asset URI, Dagster's metadata): ``file:///absolute/root``,
        ``s3://bucket/prefix`` or ``iceberg://CATALOG/NAMESPACE.TABLE``."""
        if format_of(self.format).catalog:
            return f"{self.format}://{self.catalog or DEFAULT_CATALOG}/{self.output}"
        if is_s3(self.output):
            return "s3://" + self.output.split("://", 1)[1].strip("/")
        return "file://" + str(Path(self.output.removeprefix("file://")).absolute())

    def dead_letter(self, named: str | None = None) -> Output:
        """Where this output's dead letters go: ``named``, or beside it (``<output>_dead_letter``:
        a folder, a table path or URI, ``NAMESPACE.TABLE_dead_letter``), in the same format. A
        routed output's (a template) are one table beside the routes' tables, in the route's
        place: ``s3://lake/app/_dead_letter``, ``analytics._dead_letter`` (no route starts with ``_``)."""
        if ROUTE in self.output:
            return Output(self.format, named or self.output.replace(ROUTE, DEAD_LETTER_SUFFIX), self.catalog)
        return Output(self.format, named or self.output.rstrip("/") + DEAD_LETTER_SUFFIX, self.catalog)

    def open_run(
        self,
        *,
        app: str,
        stream: str,
        decoding: DecodeSettings,
        s3: S3Settings | None = None,
        changes: ChangeSettings | None = None,
    ) -> RunSink:
        """The sink a run publishes to (kinesis_batch.output.composite): this output's table (a
        table of current state with ``changes``) or a template's tables, with the dead-letter
        output when the run decodes, as one."""
        dead = self.dead_letter(decoding.dead_letter_output) if decoding.decoding else None
        return self._composite(app, stream, s3 or S3Settings(), changes, dead)

    @property
    def routed(self) -> bool:
        """A template of one table per route (``--route-by``: kinesis_batch.routing)."""
        return ROUTE in self.output

    def route(self, route: str) -> Output:
        """The output of one route's table (the one route of a run without ``--route-by``,
        :data:`~kinesis_batch.routing.routes.SINGLE`: this output)."""
        if route == SINGLE:
            return self
        return Output(self.format, table_of(self.output, route), self.catalog)

    def open(
        self,
        *,
        app: str,
        stream: str,
        s3: S3Settings | None = None,
        changes: ChangeSettings | None = None,
    ) -> Stored:
        """The sink. ``app`` names the consumer (its lease table) in the table markers, so two
        consumers of one stream can share a table; ``s3``: how the table formats reach S3
        (default: nowhere but the standard endpoints); ``changes``: the batches are changes to
        merge (kinesis_batch.output.changes; delta and iceberg only). A template's sink is its
        tables (with ``changes``, each of its route's key) and its dead-letter output beside
        them as one (kinesis_batch.output.composite)."""
        s3 = s3 or S3Settings()
        if self.routed:
            return self._composite(app, stream, s3, changes, self.dead_letter())
        return self._open_table(app, stream, s3, Merge(changes) if changes is not None else None)

    def _composite(
        self, app: str, stream: str, s3: S3Settings, changes: ChangeSettings | None, dead: Output | None
    ) -> RunSink:
        """This output's tables by route and ``dead`` as one sink (kinesis_batch.output.composite);
        with ``changes``, each table a table of current state by its route's key."""
        from kinesis_batch.output.composite import RunSink

        def table(route: str) -> Stored:
            if changes is None:
                return self.route(route)._open_table(app, stream, s3, None)
            keyed = changes if route == SINGLE else changes.for_route(route)
            if keyed is None:  # its records are dead letters (kinesis_batch.decoding.pipeline)
                raise InvalidStateError(f"--key names no key for table {route} of {self.output}")
            return self.route(route)._open_table(app, stream, s3, Merge(keyed, None if route == SINGLE else route))

        return RunSink.of(self.output, table, dead.open(app=app, stream=stream, s3=s3) if dead else None, stream=stream)

    def tables(self, *, app: str, stream: str, s3: S3Settings | None = None) -> list[Stored]:
        """Every table this output stands for, each its own sink: the output itself, or a
        template's dead-letter output and each table its stream's runs made (by route)."""
        if not self.routed:
            return [self.open(app=app, stream=stream, s3=s3)]
        routes = self._composite(app, stream, s3 or S3Settings(), None, self.dead_letter())
        return [routes.holder, *(routes.table(route) for route in sorted(routes.known))]

    def _open_table(self, app: str, stream: str, s3: S3Settings, merge: Merge | None) -> Stored:
        """One table, by its format's row (kinesis_batch.output.formats)."""
        row = format_of(self.format)
        if merge is not None:
            row.check_merges(merge.changes.mode)
        sink: Stored = row.parts().open_table(
            self.output, catalog=self.catalog, app=app, stream=stream, s3=s3, merge=merge
        )
        return sink


def open_sink(
    format: str, output: str, *, app: str, stream: str, catalog: str | None = None, s3: S3Settings | None = None
) -> Stored:
    """The sink for ``--format``/``--output``/``--catalog``: ``Output(...).open(...)``."""
    return Output(format, output, catalog).open(app=app, stream=stream, s3=s3)


__all__ = ["FORMATS", "CommitRecord", "Output", "ShardCommit", "Sink", "Stored", "open_sink"]
