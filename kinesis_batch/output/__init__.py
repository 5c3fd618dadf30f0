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
from kinesis_batch.routing.routes import ROUTE, table_of
from kinesis_batch.storage.place import is_s3
from kinesis_batch.storage.records import CommitRecord, ShardCommit

if TYPE_CHECKING:
    from kinesis_batch.output.routed import RoutedSink

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
    ) -> Stored:
        """The sink a run publishes to: this output's (a table of current state with
        ``changes``), paired with its dead-letter output when the run decodes
        (kinesis_batch.output.paired); a template's tables and dead-letter output as one."""
        dead = self.dead_letter(decoding.dead_letter_output)
        if self.routed:
            return self.open_routes(app=app, stream=stream, s3=s3, changes=changes, dead_letters=dead)
        sink = self.open(app=app, stream=stream, s3=s3, changes=changes)
        if not decoding.decoding:
            return sink
        from kinesis_batch.output.paired import PairedSink

        return PairedSink(sink, dead.open(app=app, stream=stream, s3=s3))

    @property
    def routed(self) -> bool:
        """A template of one table per route (``--route-by``: kinesis_batch.routing)."""
        return ROUTE in self.output

    def route(self, route: str) -> Output:
        """The output of one route's table."""
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
        them as one (:meth:`open_routes`)."""
        s3 = s3 or S3Settings()
        if self.routed:
            return self.open_routes(app=app, stream=stream, s3=s3, changes=changes)
        return self._open_table(app, stream, s3, Merge(changes) if changes is not None else None)

    def open_routes(
        self,
        *,
        app: str,
        stream: str,
        s3: S3Settings | None = None,
        changes: ChangeSettings | None = None,
        dead_letters: Output | None = None,
    ) -> RoutedSink:
        """A template's sink (kinesis_batch.output.routed), as what it is: the routed run's steps
        that make and fill its tables reach them through it; ``dead_letters``: its dead-letter
        output (default: beside its tables, :meth:`dead_letter`)."""
        from kinesis_batch.output.routed import RoutedSink

        if not self.routed:
            raise InvalidStateError(f"--output {self.output} names one table, not a template with {ROUTE}")
        s3 = s3 or S3Settings()
        home = (dead_letters or self.dead_letter()).open(app=app, stream=stream, s3=s3)

        def table(route: str) -> Stored:
            if changes is None:
                return self.route(route).open(app=app, stream=stream, s3=s3)
            keyed = changes.for_route(route)
            if keyed is None:  # its records are dead letters (kinesis_batch.decoding.pipeline)
                raise InvalidStateError(f"--key names no key for table {route} of {self.output}")
            return self.route(route)._open_table(app, stream, s3, Merge(keyed, route))

        return RoutedSink(self.output, home, table, stream=stream)

    def tables(self, *, app: str, stream: str, s3: S3Settings | None = None) -> list[Stored]:
        """Every table this output stands for, each its own sink: the output itself, or a
        template's dead-letter output and each table its stream's runs made (by route)."""
        if not self.routed:
            return [self.open(app=app, stream=stream, s3=s3)]
        routes = self.open_routes(app=app, stream=stream, s3=s3)
        return [routes.home, *(routes.table(route) for route in sorted(routes.known))]

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
