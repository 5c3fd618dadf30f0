"""A group of twelve streams, as a platform team has them, through every adapter in turn: raw
records into each format, local and on S3 (two streams resharded: a diamond of splits and
merges, a split between two puts), decoded JSON events, DynamoDB changes into a table of
current state, a stream routed into a table per kind, one reached through a role and one named
by its ARN (kinesis-local: kinesalite knows no StreamARN). The command line's run is killed -9
mid-read; the group's DAG (``dag.test()``) then recovers and lands every stream; more records
come; the group's Dagster job lands them. Every stream holds exactly what was sent, once, by its
own oracle, and is left as its run alone would leave it: a run of each alone afterwards finds
nothing new, recovers nothing and meets no held lease, and no batch is pending.

The heaviest of the group scenarios: ``make test-groups`` runs it (CI does, after ``make
test-oracle``), not ``make test``."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from devkit.stack import LocalStack

from kinesis_batch.aws import dynamodb_client
from kinesis_batch.leases.store import LeaseStore
from tests.changes.support import oracle, put_changes, shuffled_history, table_state
from tests.dags.test_kinesis_streams import AHEAD, DAGS, dagbag_of, states
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import REPO, assert_exactly_once, diamond_stream
from tests.scenarios.test_another_account import ON_KINESIS_LOCAL, ROLE, arn_of
from tests.scenarios.test_group_run import faulted, streams_file
from tests.scenarios.test_routed import routed_output
from tests.streams import StreamFactory, open_shards, put, split

pytestmark = [pytest.mark.groups, ON_KINESIS_LOCAL, pytest.mark.isolated("kill -9")]

GROUP = "g"
KINDS = ("click", "view", "buy")


@dataclass
class Stream:
    """One stream of the group: how its entry names it (name or ARN), its output's flags and its
    other settings (as a run of it alone takes them), what it was sent, and how its output is
    checked against that."""

    name: str
    written: str  # the entry's and the group's `stream`: its name, or its ARN
    output: tuple[str, ...]
    settings: dict[str, str]
    kind: str  # raw, events, changes or routed
    sent: list[Any] = field(default_factory=list)

    @property
    def entry(self) -> dict[str, Any]:
        pairs = zip(self.output[::2], self.output[1::2], strict=True)
        fields = {flag.removeprefix("--"): value for flag, value in pairs}
        return {"stream": self.written, **fields, "read_limits": "none", **self.settings}

    @property
    def alone(self) -> tuple[str, ...]:
        """``kinesis-batch run`` of this stream alone, with its entry's settings."""
        flags = [part for key, value in self.settings.items() for part in (f"--{key.replace('_', '-')}", value)]
        return ("run", "--stream", self.written, *self.output, *flags, "--read-limits", "none", "--json")

    def rows(self, route: str | None = None) -> dict[str, list[Any]]:
        output = self.output if route is None else tuple(part.replace("{route}", route) for part in self.output)
        return read_rows(sink_of(output, app=f"kinesis-batch-{self.name}", stream=self.name))

    def check(self) -> None:
        """Its output holds every record sent, once (changes: the source's current state)."""
        if self.kind == "raw":
            assert_exactly_once(self.rows(), self.sent)
        elif self.kind == "events":
            assert sorted(self.rows()["n"]) == sorted(self.sent), f"{self.name}: an event lost or twice"
        elif self.kind == "changes":
            assert table_state(self.rows()) == oracle(self.sent), f"{self.name}: not the source's state"
        else:
            for kind in KINDS:
                wanted = sorted(n for n, sent_kind in self.sent if sent_kind == kind)
                assert sorted(self.rows(kind)["n"]) == wanted, f"{self.name}: {kind}'s table"


def kind_of(i: int) -> str:
    return KINDS[i % len(KINDS)]


def event(i: int, kind: str | None = None) -> bytes:
    return json.dumps({"n": i, "page": f"/p/{i % 7}", **({"type": kind} if kind else {})}).encode()


@dataclass
class Twelve:
    kinesis: Any
    streams: list[Stream]

    def send(self, count: int) -> None:
        """More records to every stream but the changes' (whose history is whole)."""
        for one in self.streams:
            start = len(one.sent)
            if one.kind == "raw":
                one.sent += put(self.kinesis, one.name, count, start=start)
            elif one.kind == "events":
                put(self.kinesis, one.name, count, start=start, payload=event)
                one.sent += range(start, start + count)
            elif one.kind == "routed":
                put(self.kinesis, one.name, count, start=start, payload=lambda i: event(i, kind_of(i)))
                one.sent += [(i, kind_of(i)) for i in range(start, start + count)]

    def check(self) -> None:
        for one in self.streams:
            one.check()

    def assert_each_left_as_alone(self) -> None:
        """A run of each stream alone (all twelve at once) finds nothing new, recovers nothing,
        meets no lease held; its leases are free and no batch is pending."""
        started = [started_alone(one) for one in self.streams]
        for one, process in zip(self.streams, started, strict=True):
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0, f"{one.name}: {err[-3000:]}"
            report = json.loads(out)
            assert (report["records"], report["recovered"], report["leased_elsewhere"]) == (0, {}, {}), report
            leases = LeaseStore(dynamodb_client(), f"kinesis-batch-{one.name}").list_leases()
            assert leases and all(lease.pending_batch_id is None and lease.lease_owner is None for lease in leases)


def started_alone(one: Stream) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kinesis_batch.cli", *one.alone],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=REPO,
    )  # fmt: skip


def twelve(kinesis: Any, factory: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Twelve:
    def output(format: str, where: str = "local") -> tuple[str, ...]:
        return output_args(format, where, tmp_path, monkeypatch)

    def made(kind: str, out: tuple[str, ...], shards: int = 2, **settings: str) -> Stream:
        name = factory.create(shards=shards)
        return Stream(name, name, out, settings, kind)

    raw = [
        made("raw", output("parquet"), shards=3),  # a diamond of reshards
        made("raw", output("delta")),
        made("raw", output("iceberg")),  # split between two puts
        made("raw", output("delta", "s3")),
        made("raw", output("iceberg", "s3")),
        made("raw", output("parquet"), shards=4),  # the big backlog beside the small ones
    ]
    group = Twelve(kinesis, [
        *raw,
        made("events", output("parquet"), decode="json"),
        made("events", output("delta", "s3"), decode="json"),
        made("changes", output("delta"), changes="dynamodb"),
        made("routed", routed_output("delta", "local", tmp_path, monkeypatch), decode="json", route_by="type"),
        made("raw", output("parquet"), role_arn=ROLE, external_id="lake-1"),
        made("raw", output("delta")),
    ])  # fmt: skip
    by_arn = group.streams[-1]
    by_arn.written = arn_of(kinesis, by_arn.name)

    diamond, _, splitting, *_ = raw
    diamond.sent = diamond_stream(kinesis, diamond.name, 25)
    group.send(60)
    split(kinesis, splitting.name, open_shards(kinesis, splitting.name)[0])
    splitting.sent += put(kinesis, splitting.name, 40, start=len(splitting.sent))
    raw[-1].sent += put(kinesis, raw[-1].name, 2000, start=len(raw[-1].sent))
    changes = next(one for one in group.streams if one.kind == "changes")
    changes.sent = shuffled_history(30, 3)
    put_changes(kinesis, changes.name, changes.sent)
    return group


def test_twelve_streams_land_exactly_once_through_the_cli_killed_mid_read_the_dag_and_dagster(
    airflow_home: Path, kinesis: Any, streams: StreamFactory, stack: LocalStack, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    import dagster as dg

    from kinesis_batch.airflow.group import stream_task_id
    from kinesis_batch.dagster import definitions_from_file

    # moto_server's STS hands out the role's keys: the environment says so to the command line and
    # Dagster, Airflow's connection (kinesis-local's, with an STS endpoint) to the DAG.
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", stack.dynamodb.url)
    connection = json.loads(stack.airflow_env(airflow_home, DAGS, kinesis="kinesis-local")["AIRFLOW_CONN_AWS_DEFAULT"])
    connection["extra"]["service_config"]["sts"] = {"endpoint_url": stack.dynamodb.url}
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps(connection))
    group = twelve(kinesis, streams, tmp_path, monkeypatch)
    path = streams_file(
        tmp_path / "streams.toml", [one.entry for one in group.streams], [one.written for one in group.streams]
    )
    path.write_text(path.read_text() + 'schedule = "@hourly"\n')

    # The command line's run, killed -9 when a task first reads: its leases are left held.
    killed = faulted("crash", path)
    assert killed.returncode == -9, killed.stderr[-3000:]
    held = [lease for one in group.streams for lease in leases_of(one.name) if lease.lease_owner is not None]
    assert held, "the kill came before any stream leased a shard"
    for one in group.streams:  # the dead worker's leases, evicted as an operator would (or as they lapse)
        store = LeaseStore(dynamodb_client(), f"kinesis-batch-{one.name}")
        for lease in leases_of(one.name):
            store.evict_lease(lease)

    # The group's DAG recovers what the kill left and lands every stream. The role is assumed at
    # the connection's STS, in the DAG's process and in the tasks of this session's Spark, whose
    # workers never had the environment's.
    with monkeypatch.context() as connection_only:
        connection_only.delenv("AWS_ENDPOINT_URL_STS")
        dag = dagbag_of(path, monkeypatch).get_dag(f"kinesis_group__{GROUP}")
        dag_run = dag.test(logical_date=datetime.now(UTC) + AHEAD)
    said = states(dag_run)
    assert set(said.values()) == {"success"}, said
    assert {stream_task_id(one.name) for one in group.streams} | {"run_group"} == set(said)
    group.check()

    # More records; the group's Dagster job lands them, each stream its own asset.
    group.send(30)
    defs = definitions_from_file(path)
    job = defs.resolve_job_def(f"kinesis_batch_group_{GROUP}_catch_up")
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False)
        assert result.success, [e.step_failure_data for e in result.all_events if e.is_step_failure]
        for one in group.streams:
            key = dg.AssetKey(["kinesis_batch", one.name])
            assert instance.fetch_materializations(key, limit=5).records, f"{one.name}: not materialized"
    group.check()
    group.assert_each_left_as_alone()


def leases_of(stream: str) -> list[Any]:
    store = LeaseStore(dynamodb_client(), f"kinesis-batch-{stream}")
    return store.list_leases() if store.table_exists() else []
