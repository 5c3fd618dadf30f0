"""Least privilege, checked against what runs really call: every AWS call a run's process makes
through botocore recorded (tests.iam) and held, as it is made, to the document `kinesis-batch
iam-policy` prints for the same flags (a call it does not allow is refused as IAM refuses it),
and each statement of it on those services needed by one of them. The kinds of runs: Delta on
S3 with dead letters and CloudWatch metrics; Avro of the Glue Schema Registry; Iceberg on Glue,
then maintained, its status, history and plan; routed changes; a backfill (with --backfills); a
job run's orchestrator, and the job run itself against the executors' document (its S3, Kinesis
and DynamoDB calls, told apart by the access key it signs with, at recording endpoints). A
stream read through its role, alone and in a group beside a stream of the consumer's own: the
calls signed with the role's keys are the reader's to allow, the rest the worker's. A
permission missing where the read runs (a Spark task, a job run) ends the run as one line
naming it, exit 2, nothing held; a KMS key the reader cannot use is named before any read
starts."""

from __future__ import annotations

import json
import os
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from devkit.iam_policy import Principal, Request, allowed, s3_requests, unneeded
from devkit.limits_proxy import ControlLimits, LimitsProxy
from devkit.s3_recorder import S3Recorder
from devkit.stack import LocalStack

from kinesis_batch import LeaseStore
from kinesis_batch.access import arns
from kinesis_batch.access.arns import Where
from kinesis_batch.aws import dynamodb_client, glue_client
from kinesis_batch.parsers import default_table
from kinesis_batch.serverless.request import DRIVER_ENV
from tests.decoding.support import avro_datum, framed, put_payloads, register, registry_stream
from tests.iam import Enforcer, Recorder, proxied, recording, worker
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import cli, read_output
from tests.serverless.standin import ROLE, StandIn, driver_conf
from tests.streams import StreamFactory, encrypted_stream, put

ACCOUNT = "123456789012"  # the local stack's (kinesalite's and moto's)


def test_every_call_of_a_run_is_allowed_by_the_worker_policy_and_each_statement_is_needed(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=2)
    put(kinesis, name, 30, payload=lambda i: json.dumps({"i": i}).encode())
    put(kinesis, name, 2, start=30, payload=lambda i: b"not json")
    flags = (*output_args("delta", "s3", tmp_path, monkeypatch), "--decode", "json", "--metrics", "cloudwatch")
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))

    worker = worker_document("--stream", name, *flags, where=where)
    stream = f"arn:aws:kinesis:{where.region}:{ACCOUNT}:stream/{name}"

    with recording(held(worker, where, stream)) as recorder:  # and refused what it does not allow
        ran = cli("run", "--stream", name, *flags, "--read-limits", "none", "--json", spark=spark)

    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["dead_letters"] == 2
    requests = sorted(set(recorder.requests(where, stream=stream)), key=str)
    denied = [request for request in requests if not allowed(worker, request)]
    assert denied == [], f"calls the printed policy does not allow: {denied}"
    assert unneeded(worker, requests) == []


@pytest.mark.parametrize("output", ["delta s3", "iceberg s3"])
def test_every_s3_request_of_a_run_is_allowed_by_the_worker_policy_and_each_s3_statement_is_needed(
    output: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 8, payload=changes)
    put(kinesis, name, 1, start=8, payload=lambda i: b"not json")  # the dead letters' files too
    flags = ("--stream", name, *output_args(*output.split(), tmp_path, monkeypatch), "--decode", "json")
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))

    worker = worker_document(*flags, where=where)

    # pyarrow's, delta-rs' and pyiceberg's S3 clients, in the driver and the tasks, pass here,
    # held to the worker's document.
    with S3Recorder(os.environ["AWS_ENDPOINT_URL_S3"], tmp_path, held(worker, where).principals) as s3:
        ran = cli("run", *flags, "--read-limits", "none", env={"AWS_ENDPOINT_URL_S3": s3.url}, spark=spark)
        made = s3.requests()

    assert ran.returncode == 0, ran.stderr[-2000:]
    requests = set(s3_requests(made, where.partition))
    assert {r.action for r in requests} >= {"s3:PutObject", "s3:GetObject"}, requests
    assert sorted({(r.action, r.resource, r.context) for r in requests if not allowed(worker, r)}) == []
    assert unneeded(worker, requests, recorded=("s3:",)) == []


def deny_get_records(proxy: LimitsProxy, stream: str, principal: str, *, after: int = 0) -> None:
    """GetRecords refused at ``proxy`` (but for the next ``after``), in IAM's words for ``principal``."""
    proxy.refuse(
        "GetRecords", "AccessDeniedException",
        f"User: {principal} is not authorized to perform: kinesis:GetRecords on resource: {stream} because no "
        "identity-based policy allows the kinesis:GetRecords action", after=after,
    )  # fmt: skip


def denied_run(proxy: LimitsProxy, name: str, output: Path, spark: Any) -> str:
    """The last line of a run of ``name`` into ``output`` through ``proxy``, which must end it, exit 2."""
    ran = cli("run", "--stream", name, "--output", str(output), "--read-limits", "none",
              env={"AWS_ENDPOINT_URL_KINESIS": proxy.url}, spark=spark)  # fmt: skip
    assert ran.returncode == 2, ran.stderr[-3000:]
    return ran.stderr.strip().splitlines()[-1]


def assert_nothing_held(name: str, output: Path) -> None:
    owners = [lease.lease_owner for lease in LeaseStore(dynamodb_client(), default_table(name)).list_leases()]
    assert owners == [None], "a lease left held"
    assert not read_output(output), "something was published"


def test_a_read_denied_inside_a_spark_task_is_one_line_exit_2_and_nothing_published_or_held(
    proxies: tuple[LimitsProxy, LimitsProxy], kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    kinesis_proxy, _ = proxies
    name = streams.create(shards=1)
    put(kinesis, name, 10)
    stream = f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/{name}"
    executors = f"arn:aws:sts::{ACCOUNT}:assumed-role/spark-executors/i-0abc"
    # The run's own look for news is served; the task's read is what AWS would deny the executors.
    deny_get_records(kinesis_proxy, stream, executors, after=1)
    output = tmp_path / "out"

    line = denied_run(kinesis_proxy, name, output, spark)

    assert line == (
        f"kinesis-batch: error: access denied: kinesis:GetRecords on {stream} for {executors} "
        "(kinesis-batch iam-policy prints the policies each principal needs); nothing was published"
    )
    assert kinesis_proxy.calls["GetRecords"] >= 2, "the task's read, not the run's look for news, was denied"
    assert_nothing_held(name, output)


def test_a_job_runs_orchestrator_calls_what_its_policy_allows_and_a_read_denied_inside_is_the_same_one_line(
    proxies: tuple[LimitsProxy, LimitsProxy],
    emr_serverless: StandIn,
    kinesis: Any,
    streams: StreamFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kinesis_proxy, _ = proxies
    name = streams.create(shards=1)
    put(kinesis, name, 10)
    stream = f"arn:aws:kinesis:us-east-1:{ACCOUNT}:stream/{name}"
    job_role = f"arn:aws:sts::{ACCOUNT}:assumed-role/emr-serverless-job/00run"
    # Only the job run reads through the proxy: what AWS would deny the job role's executors.
    deny_get_records(kinesis_proxy, stream, job_role)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    application = emr_serverless.application()
    job = (
        "--emr-serverless-application", application, "--execution-role", ROLE,
        "--environment", emr_serverless.environment(),
        "--emr-serverless-conf", f"{DRIVER_ENV}AWS_ENDPOINT_URL_KINESIS={kinesis_proxy.url}",
    )  # fmt: skip

    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    worker = worker_document("--stream", name, *output, *job, where=where)

    with recording(held(worker, where, stream)) as recorder:  # the orchestrator's calls, up to the job run's end
        ran = cli("run", "--stream", name, *output, "--read-limits", "none", *job)

    assert ran.returncode == 2, ran.stderr[-3000:]
    (job_run,) = emr_serverless.job_runs(application)
    line = ran.stderr.strip().splitlines()[-1]
    assert line.startswith(
        f"kinesis-batch: error: access denied: kinesis:GetRecords on {stream} for {job_role} "
        f"(kinesis-batch iam-policy prints the policies each principal needs); "
    ), line
    assert f"EMR Serverless job run {job_run['jobRunId']} ended FAILED" in line and "nothing was published" in line
    assert kinesis_proxy.calls["GetRecords"] >= 1, "the job's read was not the one denied"
    owners = [lease.lease_owner for lease in LeaseStore(dynamodb_client(), default_table(name)).list_leases()]
    assert owners == [None], "a lease left held"
    assert not read_rows(sink_of(output, app=default_table(name), stream=name)), "something was published"
    actions = {request.action for request in recorder.requests(where, stream=stream)}
    assert {"emr-serverless:StartJobRun", "emr-serverless:GetJobRun", "iam:PassRole"} <= actions, actions
    assert denied_calls(recorder, worker, where, stream) == []
    assert unneeded(worker, recorder.requests(where, stream=stream)) == []


def test_a_job_runs_own_calls_are_each_allowed_by_the_printed_executors_policy_and_each_statement_needed(
    proxies: tuple[LimitsProxy, LimitsProxy],
    emr_serverless: StandIn,
    kinesis: Any,
    streams: StreamFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kinesis_proxy, dynamodb_proxy = proxies
    name = streams.create(shards=1)
    # Records of an older version: the tasks ask the registry for it themselves; and a dead letter.
    registry = registry_stream(kinesis, name, older=True)
    # Iceberg on Glue: the job's driver finds the table in the catalog itself.
    output = (*output_args("iceberg", "glue", tmp_path, monkeypatch), "--decode", "avro",
              "--schema", f"glue://{registry}/orders")  # fmt: skip
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    job_key = "AKIAJOBRUNEXECUTORS1"  # the job role's: every call signed with it is the executors'
    application, environment = emr_serverless.application(), emr_serverless.environment()
    base = ("--emr-serverless-application", application, "--execution-role", ROLE, "--environment", environment)
    printed = cli("iam-policy", "--stream", name, *output, *base, "--account", where.account, "--region",
                  where.region, "--for", "executors")  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    executors = json.loads(printed.stdout)
    # The job's table files are held to the executors' document as it writes them.
    job_role = f"arn:aws:sts::{ACCOUNT}:assumed-role/kinesis-batch-job/00run"
    enforce = {job_key: Principal(job_role, executors)}

    with (
        S3Recorder(os.environ["AWS_ENDPOINT_URL_S3"], tmp_path, enforce) as s3,
        LimitsProxy(str(glue_client().meta.endpoint_url), control=ControlLimits.none()) as glue_proxy,
    ):
        endpoints = {"KINESIS": kinesis_proxy.url, "DYNAMODB": dynamodb_proxy.url, "S3": s3.url, "GLUE": glue_proxy.url}
        job = (*base, *driver_conf(endpoints, job_key))
        # The spec carries the orchestrator's S3 and Glue endpoints to the job: these, recording.
        passed = {"AWS_ENDPOINT_URL_S3": s3.url, "AWS_ENDPOINT_URL_GLUE": glue_proxy.url}
        ran = cli("run", "--stream", name, *output, "--read-limits", "none", *job, env=passed)
        made = [request for request in s3.requests() if request.signer == job_key]

    assert ran.returncode == 0, ran.stderr[-2000:]
    stream = arns.stream(name, where)
    requests = set(s3_requests(made, where.partition))
    for proxy, of in (
        (kinesis_proxy, proxied("kinesis", where, stream=stream)),
        (dynamodb_proxy, proxied("dynamodb", where)),
        (glue_proxy, proxied("glue", where, schema=(registry, "orders"))),
    ):
        requests |= {request for op, key, named in proxy.signed if key == job_key for request in of(op, named)}
    actions = {r.action for r in requests}
    assert {"kinesis:GetRecords", "s3:PutObject", "glue:GetSchemaVersion", "glue:GetTable"} <= actions, actions
    assert any(action.startswith("dynamodb:") for action in actions), actions
    assert sorted({(r.action, r.resource) for r in requests if not allowed(executors, r)}) == []
    # The stand-in fetches the environment archive itself, as EMR Serverless does with the job role.
    recorded = ("s3:", "kinesis:", "dynamodb:", "glue:")
    assert unneeded(executors, requests, recorded=recorded) == ["TheEnvironmentArchive"]


#: The worker's principal, as IAM names its session in a refusal.
WORKER = f"arn:aws:sts::{ACCOUNT}:assumed-role/airflow-worker/i-0abc"
READER = "arn:aws:sts::111111111111:assumed-role/kinesis-reader/kinesis-batch"


def held(document: dict[str, Any], where: Where, stream: str = "") -> Enforcer:
    """The worker's calls held to ``document`` while they are recorded: one it does not allow fails."""
    return worker(WORKER, document, where, stream)


def as_reader(docs: dict[str, dict[str, Any]], where: Where, role: str, stream: str, ours: str = "") -> Enforcer:
    """The worker's calls held to its document, the role's (any other key's) to the reader's, and
    the role's assumption to its trust policy; ``ours``: a stream the worker reads itself."""
    key = os.environ["AWS_ACCESS_KEY_ID"]
    principals = {key: Principal(WORKER, docs["worker"]), "*": Principal(READER, docs["reader"])}
    streams = {key: ours} if ours else {}
    return Enforcer(principals, where, stream, resources={role: docs["reader-trust"]}, streams=streams)


def worker_document(*flags: str, where: Where) -> dict[str, Any]:
    printed = cli("iam-policy", *flags, "--account", where.account, "--region", where.region, "--for", "worker")
    assert printed.returncode == 0, printed.stderr
    document: dict[str, Any] = json.loads(printed.stdout)
    return document


def denied_calls(recorder: Recorder, document: dict[str, Any], where: Where, stream: str) -> list[Request]:
    requests = sorted(set(recorder.requests(where, stream=stream)), key=str)
    return [request for request in requests if not allowed(document, request)]


def changes(i: int) -> bytes:
    return json.dumps({"type": "order" if i % 2 else "refund", "id": i % 4, "v": i}).encode()


#: Kinds of runs: what is put, the stream's flags (beside its output), the commands run with them.
KINDS: dict[str, tuple[str, tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    "iceberg on Glue, then maintained, its status, history and plan": (
        "iceberg glue", ("--decode", "json"),
        (("run", "--read-limits", "none"), ("maintain",), ("status",), ("history",), ("plan",)),
    ),
    "routed changes into Delta on S3": (
        "delta s3", ("--decode", "json", "--route-by", "type", "--changes", "upsert", "--key", "id",
                     "--sequence-by", "v"),
        (("run", "--read-limits", "none"),),
    ),
}  # fmt: skip
#: What each command takes of the stream's flags (a command not named: all of them).
TAKES = {"maintain": ("--output", "--format", "--catalog"), "status": ("--stream",), "history": ("--stream",),
         "plan": ("--stream",)}  # fmt: skip


def taken(command: str, flags: tuple[str, ...]) -> tuple[str, ...]:
    if command not in TAKES:
        return flags
    pairs = zip(flags[::2], flags[1::2], strict=False)
    return tuple(part for flag, value in pairs if flag in TAKES[command] for part in (flag, value))


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_run_calls_only_what_the_printed_worker_policy_allows(
    kind: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output, settings, commands = KINDS[kind]
    name = streams.create(shards=1)
    put(kinesis, name, 12, payload=changes)
    put(kinesis, name, 1, start=12, payload=lambda i: b"not json")  # the dead letters' path too
    made = output_args(*output.split(), tmp_path, monkeypatch)
    if "--route-by" in settings:  # a table per kind, beside each other
        made = tuple(f"{value}/{{route}}" if value.startswith("s3://") else value for value in made)
    flags = ("--stream", name, *made, *settings)
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))

    stream = f"arn:aws:kinesis:{where.region}:{ACCOUNT}:stream/{name}"
    worker = worker_document(*flags, where=where)

    with recording(held(worker, where, stream)) as recorder:
        for command, *more in commands:
            ran = cli(command, *taken(command, flags[2:] if command == "maintain" else flags), *more, spark=spark)
            assert ran.returncode == 0, f"{command}: {ran.stderr[-2000:]}"

    assert denied_calls(recorder, worker, where, stream) == []
    assert unneeded(worker, recorder.requests(where, stream=stream)) == []


def test_a_typed_run_with_the_registry_calls_only_what_the_printed_worker_policy_allows(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    registry = f"r{uuid.uuid4().hex[:8]}"
    version = register(glue_client(), registry, "orders", "AVRO", schema)
    name = streams.create(shards=1)
    put_payloads(kinesis, name, [framed(version, avro_datum(schema, {"id": i})) for i in range(4)])
    flags = ("--stream", name, *output_args("delta", "s3", tmp_path, monkeypatch),
             "--decode", "avro", "--schema", f"glue://{registry}/orders")  # fmt: skip
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))

    worker = worker_document(*flags, where=where)

    with recording(held(worker, where, arns.stream(name, where))) as recorder:
        ran = cli("run", *flags, "--read-limits", "none", spark=spark)

    assert ran.returncode == 0, ran.stderr[-2000:]
    requests = set(recorder.requests(where, stream=arns.stream(name, where)))
    assert "glue:GetSchemaVersion" in {r.action for r in requests}
    assert [r for r in requests if not allowed(worker, r)] == []
    assert unneeded(worker, requests) == []


def test_a_backfill_calls_only_what_the_worker_policy_printed_with_backfills_allows(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 12, payload=changes)
    flags = ("--stream", name, *output_args("delta", "s3", tmp_path, monkeypatch), "--decode", "json")
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    assert cli("run", *flags, "--read-limits", "none", spark=spark).returncode == 0

    stream = f"arn:aws:kinesis:{where.region}:{ACCOUNT}:stream/{name}"
    backfills = worker_document(*flags, "--backfills", where=where)

    with recording(held(backfills, where, stream)) as recorder:
        ran = cli("backfill", *flags, "--backfill-id", "b1", "--read-limits", "none", spark=spark)

    assert ran.returncode == 0, ran.stderr[-2000:]
    assert denied_calls(recorder, backfills, where, stream) == []
    without = {
        (r.action, r.resource.rpartition("/")[2])
        for r in denied_calls(recorder, worker_document(*flags, where=where), where, stream)
    }
    assert ("dynamodb:CreateTable", f"{default_table(name)}-backfill-b1") in without, without


@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no encryption
def test_a_kms_key_the_reader_cannot_use_is_named_before_anything_is_read(
    proxies: tuple[LimitsProxy, LimitsProxy], kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    kinesis_proxy, _ = proxies
    name, key = encrypted_stream(kinesis, streams, ACCOUNT, records=10)
    said = "The ciphertext refers to a customer master key that you do not have access to"
    kinesis_proxy.refuse("GetRecords", "KMSAccessDeniedException", said)
    output = tmp_path / "out"

    line = denied_run(kinesis_proxy, name, output, spark)

    assert line == (
        f"kinesis-batch: error: access denied: kms:Decrypt on {key}, the KMS key stream {name} is encrypted with, "
        f"for its reader (KMSAccessDeniedException: {said}) (kinesis-batch iam-policy --kms-key {key} prints the "
        "policies each principal needs); nothing was published"
    )
    assert kinesis_proxy.calls["GetRecords"] == 1, "a read started: only the look for news may ask"
    assert_nothing_held(name, output)


@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no StreamARN
def test_a_stream_read_through_its_role_is_the_readers_to_read_and_the_workers_for_the_rest(
    kinesis: Any, streams: StreamFactory, stack: LocalStack, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 10)
    stream = str(kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])
    role = "arn:aws:iam::111111111111:role/kinesis-reader"
    flags = ("--stream", stream, "--role-arn", role, "--external-id", "lake-1", "--output", str(tmp_path / "out"))
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    printed = cli("iam-policy", *flags, "--account", where.account, "--region", where.region)
    assert printed.returncode == 0, printed.stderr
    docs = json.loads(printed.stdout)

    with recording(as_reader(docs, where, role, stream)) as recorder:  # moto_server's STS hands out the role's keys
        ran = cli("run", *flags, "--read-limits", "none", env={"AWS_ENDPOINT_URL_STS": stack.dynamodb.url}, spark=spark)

    assert ran.returncode == 0, ran.stderr
    requests = set(recorder.requests(where, stream=stream))
    assert {r.action for r in requests} >= {"sts:AssumeRole", "kinesis:ListShards", "dynamodb:UpdateItem"}
    for request in requests:
        if request.action.startswith("kinesis:"):  # signed with the role's keys: the reader's to allow
            assert allowed(docs["reader"], request) and not allowed(docs["worker"], request), request
        else:
            assert allowed(docs["worker"], request), request


@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no StreamARN
def test_a_group_with_a_stream_of_another_account_calls_with_each_principal_what_its_document_allows(
    kinesis: Any, streams: StreamFactory, stack: LocalStack, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, theirs = streams.create(shards=1), streams.create(shards=1)
    for name in (ours, theirs):
        put(kinesis, name, 6, payload=changes)
    arn = str(kinesis.describe_stream_summary(StreamName=theirs)["StreamDescriptionSummary"]["StreamARN"])
    role = "arn:aws:iam::111111111111:role/kinesis-reader"
    (_, _, _, ours_out), (_, _, _, theirs_out) = (output_args("delta", "s3", tmp_path, monkeypatch) for _ in "ab")
    path = tmp_path / "streams.toml"
    path.write_text(
        textwrap.dedent(f"""\
            [[streams]]
            stream = "{ours}"
            output = "{ours_out}"
            format = "delta"
            decode = "json"
            read_limits = "none"

            [[streams]]
            stream = "{theirs}"
            stream_arn = "{arn}"
            role_arn = "{role}"
            external_id = "lake-1"
            output = "{theirs_out}"
            format = "delta"
            read_limits = "none"

            [[groups]]
            name = "g"
            streams = ["{ours}", "{theirs}"]
        """)
    )
    where = Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    group = ("--streams-file", str(path), "--group", "g")
    printed = cli("iam-policy", *group, "--account", where.account, "--region", where.region)
    assert printed.returncode == 0, printed.stderr
    docs = json.loads(printed.stdout)
    enforce = as_reader(docs, where, role, arn, arns.stream(ours, where))
    with recording(enforce) as recorder:  # moto_server's STS hands out the role's keys
        ran = cli("run", *group, env={"AWS_ENDPOINT_URL_STS": stack.dynamodb.url}, spark=spark)

    assert ran.returncode == 0, ran.stderr
    signers = recorder.signed_with()
    worker_key = os.environ["AWS_ACCESS_KEY_ID"]
    assert set(signers) - {worker_key}, "no call was signed with the role's keys"
    for key, calls in signers.items():
        principal, stream = ("worker", arns.stream(ours, where)) if key == worker_key else ("reader", arn)
        requests = set(calls.requests(where, stream=stream))
        assert [r for r in requests if not allowed(docs[principal], r)] == [], principal
        if principal == "reader":  # the role's: the worker's document grants none of it
            assert {r.action for r in requests} >= {"kinesis:ListShards", "kinesis:GetRecords"}, requests
            assert not [r for r in requests if allowed(docs["worker"], r)]
    assert (
        unneeded(docs["worker"], recorder.signed_with()[worker_key].requests(where, stream=arns.stream(ours, where)))
        == []
    )
