"""A group of streams in one run (``kinesis-batch run --streams-file F --group G``): raw streams
into each format (two of them resharded), decoded JSON events and DynamoDB changes into a table
of current state. Each stream lands exactly once into its own output, by its own oracle, and is
left as its run alone would leave it (a run of it alone afterwards finds nothing new); a broken
stream (its output another format's table, its stream deleted before the run or in the middle of
it, its role refused, its entry mistyped or missing) fails alone, with its own line, while the
others publish and commit; a kill -9 mid-read loses nothing on the rerun; and a group run beside
a run of one of its streams alone never reads a shard twice. The group of twelve, through every
adapter, is tests/scenarios/test_group_of_twelve.py."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from devkit.limits_proxy import ControlLimits, LimitsProxy
from devkit.stack import LocalStack

from kinesis_batch.aws import dynamodb_client
from kinesis_batch.leases.store import LeaseStore
from tests import faultpoints
from tests.changes.support import oracle, put_changes, shuffled_history, table_state
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import REPO, Ran, assert_exactly_once, cli, diamond_stream
from tests.scenarios.test_another_account import ROLE
from tests.scenarios.test_foreign_outputs import make_target
from tests.streams import StreamFactory, open_shards, put, split

#: The formats of a group's streams, one stream each (the first with a reshard history).
FORMATS = (("parquet", "local"), ("delta", "local"), ("iceberg", "local"), ("delta", "s3"))


def entry(stream: str, output: tuple[str, ...], **settings: Any) -> dict[str, Any]:
    """A [[streams]] entry: ``output`` is output_args' flags, as the entry's fields."""
    fields = {flag.removeprefix("--"): value for flag, value in zip(output[::2], output[1::2], strict=True)}
    return {"stream": stream, **fields, **settings}


def streams_file(path: Path, entries: list[dict[str, Any]], members: list[str], group: str = "g") -> Path:
    def value(v: Any) -> str:
        return json.dumps(v)  # a TOML basic string, number or array of strings is JSON's too

    tables = ["[[streams]]\n" + "".join(f"{k} = {value(v)}\n" for k, v in e.items()) for e in entries]
    tables.append(f"[[groups]]\nname = {value(group)}\nstreams = {value(members)}\n")
    path.write_text("\n".join(tables))
    return path


def run_group(path: Path, spark: Any, *extra: str) -> Ran:
    return cli("run", "--streams-file", str(path), "--group", "g", "--json", *extra, spark=spark)


def faulted(
    action: str, path: Path, *extra: str, step: str = "reading", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The group's run with a fault (tests.faultpoints) at ``step``: by default crashed or
    signalled when a task first reads."""
    return subprocess.run(
        faultpoints.command(action, step, "run", "--streams-file", str(path), "--group", "g", *extra),
        capture_output=True, text=True, timeout=300, start_new_session=True, cwd=REPO,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


@dataclass(frozen=True)
class Member:
    """A stream of the group: its output's flags, the records sent, and the check that its
    output holds exactly what was sent, by its own oracle."""

    name: str
    output: tuple[str, ...]
    records: int
    check: Callable[[], None]
    raw: bool = True  # rows of records, each with its batch_id
    flags: tuple[str, ...] = ()  # its entry's settings beside the output, as a run of it alone gives them

    @property
    def alone(self) -> tuple[str, ...]:
        return (*self.output, *self.flags)


def made(
    kinesis: Any, streams: StreamFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[dict[str, Any]], dict[str, Member]]:
    """A group's streams, in order: one per raw format (the first with a reshard history, the
    third split once), then decoded JSON events, then DynamoDB changes into a table of current
    state: (entries, its members by stream)."""
    entries, members = [], {}

    def member(name: str, output: tuple[str, ...], records: int, check: Callable[[], None], **settings: Any) -> None:
        entries.append(entry(name, output, read_limits="none", **settings))
        flags = tuple(part for key, value in settings.items() for part in (f"--{key}", value))
        members[name] = Member(name, output, records, check, raw=not settings, flags=flags)

    for number, (format, where) in enumerate(FORMATS):
        name = streams.create(shards=3 if number == 0 else 2)
        sent = diamond_stream(kinesis, name, 25) if number == 0 else put(kinesis, name, 80)
        if number == 2:  # a split after the first records, more after it
            split(kinesis, name, open_shards(kinesis, name)[0])
            sent += put(kinesis, name, 40, start=len(sent))
        output = output_args(format, where, tmp_path, monkeypatch)
        member(name, output, len(sent), functools.partial(_exactly_once, name, output, sent))

    events = streams.create(shards=2)
    put(kinesis, events, 60, payload=lambda i: json.dumps({"n": i, "page": f"/p/{i % 7}"}).encode())
    output = output_args("parquet", "local", tmp_path, monkeypatch)
    member(events, output, 60, functools.partial(_each_event_once, events, output, 60), decode="json")

    changes = streams.create(shards=2)
    history = shuffled_history(30, 3)
    put_changes(kinesis, changes, history)
    output = output_args("delta", "local", tmp_path, monkeypatch)
    state = functools.partial(_current_state, changes, output, oracle(history))
    member(changes, output, len(history), state, changes="dynamodb")
    return entries, members


def _exactly_once(name: str, output: tuple[str, ...], sent: list[str]) -> None:
    assert_exactly_once(rows_of(name, output), sent)


def _each_event_once(name: str, output: tuple[str, ...], count: int) -> None:
    rows = rows_of(name, output)
    assert sorted(rows["n"]) == list(range(count)), "a decoded event lost or twice"


def _current_state(name: str, output: tuple[str, ...], expected: dict[str, dict[str, Any]]) -> None:
    assert table_state(rows_of(name, output)) == expected


def rows_of(name: str, output: tuple[str, ...]) -> dict[str, list[Any]]:
    return read_rows(sink_of(output, app=f"kinesis-batch-{name}", stream=name))


def assert_left_as_alone(name: str, output: tuple[str, ...], spark: Any) -> None:
    """A run of the stream alone after the group's finds nothing new: the group moved every
    checkpoint to the stream's end and left no lease held, no batch pending."""
    alone = cli("run", "--stream", name, *output, "--read-limits", "none", "--json", spark=spark)
    assert alone.returncode == 0, alone.stderr[-3000:]
    report = json.loads(alone.stdout)
    assert (report["records"], report["recovered"], report["leased_elsewhere"]) == (0, {}, {}), report
    leases = LeaseStore(dynamodb_client(), f"kinesis-batch-{name}").list_leases()
    assert leases and all(lease.pending_batch_id is None and lease.lease_owner is None for lease in leases)


def test_a_group_run_lands_every_stream_exactly_once_and_leaves_each_as_its_run_alone_would(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, members = made(kinesis, streams, tmp_path, monkeypatch)
    path = streams_file(tmp_path / "streams.toml", entries, list(members))

    ran = run_group(path, spark)

    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout)
    assert [s["stream"] for s in report["streams"]] == list(members) and report["exit_code"] == 0
    for stream in report["streams"]:
        one = members[stream["stream"]]
        assert (stream["exit_code"], stream["published"], stream["records"]) == (0, True, one.records)
        # local[*]'s slots shared by the streams read at once: none takes them all
        assert stream["tasks"] <= max(1, (os.cpu_count() or 1) // len(members)), stream
        one.check()
        if one.raw:  # its own batch, in its own output
            assert set(rows_of(one.name, one.output)["batch_id"]) == {stream["batch_id"]}
        assert_left_as_alone(one.name, one.alone, spark)
    assert len({s["batch_id"] for s in report["streams"]}) == len(members), "two streams shared a batch"


@pytest.mark.isolated("a fault in a run's process")
def test_a_broken_stream_of_a_group_fails_alone_with_its_own_line_while_the_others_commit(
    kinesis: Any, streams: StreamFactory, stack: LocalStack, spark: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    good = streams.create(shards=2)
    sent = put(kinesis, good, 50)
    good_output = output_args("parquet", "local", tmp_path, monkeypatch)
    foreign = streams.create(shards=1)  # its output holds another format's table
    put(kinesis, foreign, 5)
    foreign_output = output_args("parquet", "local", tmp_path, monkeypatch)
    make_target("delta table", Path(foreign_output[3]), tmp_path)
    gone = streams.create(shards=1)  # deleted before the group's run reaches it
    kinesis.delete_stream(StreamName=gone)
    deleted = streams.create(shards=2)  # deleted mid-run: its leases taken, its batch prepared
    put(kinesis, deleted, 10)
    theirs = streams.create(shards=1)  # read through a role that STS refuses
    entries = [
        entry(good, good_output, read_limits="none"),
        entry(foreign, foreign_output),
        entry(gone, output_args("parquet", "local", tmp_path, monkeypatch)),
        entry(deleted, output_args("parquet", "local", tmp_path, monkeypatch)),
        {"stream": "typo", "output": str(tmp_path / "typo"), "fromat": "delta"},
        entry(theirs, output_args("parquet", "local", tmp_path, monkeypatch), role_arn=ROLE),
    ]
    failing = [foreign, gone, deleted, "typo", "nowhere", theirs]
    members = [foreign, good, gone, deleted, "typo", "nowhere", theirs]
    path = streams_file(tmp_path / "streams.toml", entries, members)

    sts = LimitsProxy(stack.dynamodb.url, control=ControlLimits.none()).__enter__()
    request.addfinalizer(lambda: sts.__exit__(None, None, None))
    sts.refuse("AssumeRole", "AccessDenied", f"not authorized to perform: sts:AssumeRole on {ROLE}")
    refusing = {"AWS_ENDPOINT_URL_STS": sts.url}  # every call of the role's stream, the fleet's too
    ran = faulted(f"delete-stream:{deleted}", path, step="prepared", env=refusing)

    assert ran.returncode == 2, ran.stderr[-3000:]
    errors = [line for line in ran.stderr.splitlines() if line.startswith("kinesis-batch: error:")]
    by_stream = {line.removeprefix("kinesis-batch: error: ").split(": ", 1)[0]: line for line in errors}
    assert sorted(by_stream) == sorted(failing), errors
    assert len(errors) == len(failing) and "Traceback" not in ran.stderr
    assert f"access denied: AssumeRole {ROLE}: " in by_stream[theirs], by_stream[theirs]
    assert f"--role-arn {ROLE}: its trust policy must allow them" in by_stream[theirs], by_stream[theirs]
    assert not LeaseStore(dynamodb_client(), f"kinesis-batch-{theirs}").table_exists()
    assert "delta" in by_stream[foreign] and gone in by_stream[gone] and "does not exist" in by_stream[gone]
    assert "does not exist; nothing was published" in by_stream[deleted], by_stream[deleted]
    # Leased and prepared when its stream went: its leases let go, its batch never published.
    left = LeaseStore(dynamodb_client(), f"kinesis-batch-{deleted}").list_leases()
    assert left and all(lease.lease_owner is None for lease in left), left
    assert "fromat: not a setting (did you mean format?)" in by_stream["typo"]
    assert "'nowhere' has no [[streams]] entry" in by_stream["nowhere"]
    assert f"{good}: run " in ran.stdout and "6 failed" in ran.stdout.splitlines()[-1], ran.stdout
    assert_exactly_once(rows_of(good, good_output), sent)
    assert_left_as_alone(good, good_output, spark)
    assert not LeaseStore(dynamodb_client(), f"kinesis-batch-{foreign}").table_exists()
    assert not (Path(foreign_output[3]) / "_kinesis_batch").exists()

    # The fleet at a glance: the group's failed streams first, each with its line; the good one last.
    fleet = cli("status", "--streams-file", str(path), "--json", env=refusing)
    assert fleet.returncode == 0, fleet.stderr[-3000:]
    lines = json.loads(fleet.stdout)
    assert sorted(line["stream"] for line in lines[:6]) == sorted(failing), lines
    assert all(line["error"] and line["group"] == "g" for line in lines[:6]), lines
    last = lines[-1]
    assert (last["stream"], last["group"], last["error"], last["outcome"]) == (good, "g", None, "committed"), last
    assert (last["records"], last["pending_batches"], last["retention_risk"]) == (len(sent), [], "ok"), last
    assert "its trust policy must allow them" in next(line["error"] for line in lines if line["stream"] == theirs)
    said = cli("status", "--streams-file", str(path), env=refusing)
    assert said.returncode == 0 and said.stdout.splitlines()[0].endswith("worst first: 6 that cannot be read")


@pytest.mark.isolated("kill -9")
@pytest.mark.groups  # make test-groups
def test_a_group_killed_mid_read_loses_nothing_and_duplicates_nothing_when_run_again(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, members = made(kinesis, streams, tmp_path, monkeypatch)
    path = streams_file(tmp_path / "streams.toml", entries, list(members))

    killed = faulted("crash", path)
    assert killed.returncode == -9, killed.stderr[-3000:]
    pending = 0
    for name in members:  # the dead worker's leases, evicted as an operator would (or as they lapse)
        store = LeaseStore(dynamodb_client(), f"kinesis-batch-{name}")
        for lease in store.list_leases() if store.table_exists() else []:
            pending += lease.pending_batch_id is not None
            store.evict_lease(lease)
    assert pending, "the kill came before any stream's batch was under way"

    ran = run_group(path, spark)

    assert ran.returncode == 0, ran.stderr[-3000:]
    for one in members.values():
        one.check()
        assert_left_as_alone(one.name, one.alone, spark)


@pytest.mark.isolated("two runs at once, as two hosts")
def test_a_group_run_beside_a_run_of_one_of_its_streams_alone_never_reads_a_shard_twice(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, members = made(kinesis, streams, tmp_path, monkeypatch)
    path = streams_file(tmp_path / "streams.toml", entries, list(members))
    shared = entries[0]["stream"]
    alone_output = members[shared].alone

    def started(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "kinesis_batch.cli", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=REPO,
        )  # fmt: skip

    group = started("run", "--streams-file", str(path), "--group", "g", "--json")
    alone = started("run", "--stream", shared, *alone_output, "--read-limits", "none", "--json")
    group_out, group_err = group.communicate(timeout=300)
    alone_out, alone_err = alone.communicate(timeout=300)

    assert group.returncode == 0, group_err[-3000:]
    assert alone.returncode == 0, alone_err[-3000:]
    read_by_group = next(s for s in json.loads(group_out)["streams"] if s["stream"] == shared)
    read_alone = json.loads(alone_out)
    shards = [s["shard_id"] for s in read_by_group["shards"]] + [s["shard_id"] for s in read_alone["shards"]]
    assert len(shards) == len(set(shards)), f"a shard was read by both: {sorted(shards)}"
    # What one skipped (leased by the other) the next run reads: then every record is there once.
    finish = cli("run", "--streams-file", str(path), "--group", "g", spark=spark)
    assert finish.returncode == 0, finish.stderr[-3000:]
    for one in members.values():
        one.check()


@pytest.mark.isolated("a signal")
@pytest.mark.groups  # make test-groups
def test_a_group_told_to_stop_mid_read_stops_every_stream_cleanly_and_the_next_run_lands_each_once(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, members = made(kinesis, streams, tmp_path, monkeypatch)
    path = streams_file(tmp_path / "streams.toml", entries, list(members))

    stopped = faulted("sigterm", path, "--json")

    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert "Traceback" not in stopped.stderr
    report = json.loads(stopped.stdout)
    # Each stream ended as a run alone told to stop does (or, read before the signal, as a run that finished).
    assert {s["exit_code"] for s in report["streams"]} <= {0, 143} and 143 in {
        s["exit_code"] for s in report["streams"]
    }
    for stream in report["streams"]:
        leases = LeaseStore(dynamodb_client(), f"kinesis-batch-{stream['stream']}").list_leases()
        assert all(lease.lease_owner is None and lease.pending_batch_id is None for lease in leases), stream

    again = run_group(path, spark)
    assert again.returncode == 0, again.stderr[-3000:]
    for one in members.values():
        one.check()
