"""Each statement of the printed policies, taken out, fails a run as the one line that names a
call it grants. The stack enforces the documents as IAM would: every botocore call (tests.iam)
and every S3 request of the table files (devkit.s3_recorder) signed with the worker's key, or
with the stream's role's, is held to that principal's document, and one it does not allow is
answered as AWS answers it (AccessDenied in IAM's words) and never made. The run ends exit 2
with ``access denied: ACTION on RESOURCE for PRINCIPAL (...)``, holds no lease and publishes
nothing. The one exception is the metrics: a run whose metrics are refused is published, and
says so in one warning line."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from devkit.iam_policy import Principal, Request, allowed
from devkit.limits_proxy import ControlLimits, LimitsProxy
from devkit.s3_recorder import S3Recorder
from devkit.stack import LocalStack

from kinesis_batch import LeaseStore
from kinesis_batch.access import arns
from kinesis_batch.access.arns import Where
from kinesis_batch.aws import dynamodb_client, glue_client
from kinesis_batch.errors import POLICIES
from kinesis_batch.parsers import default_table
from tests.decoding.support import registry_stream
from tests.iam import KMS_DENIED, Enforcer, kms_decrypt, proxied, recording, refusing, worker
from tests.output.support import output_args, read_rows, sink_of
from tests.runs import Ran, cli
from tests.serverless.standin import ROLE, StandIn, driver_conf
from tests.streams import StreamFactory, encrypted_stream, put

ACCOUNT = "123456789012"  # the local stack's (kinesalite's and moto's)
WORKER = f"arn:aws:sts::{ACCOUNT}:assumed-role/airflow-worker/i-0abc"  # the orchestrator's principal
ROLE_ARN = "arn:aws:iam::111111111111:role/kinesis-reader"  # the stream's role, in the stream's account
READER = "arn:aws:sts::111111111111:assumed-role/kinesis-reader/kinesis-batch"  # its sessions
#: The one line, and what may follow it: "; nothing was published", what else to look at.
LINE = re.compile(rf"kinesis-batch: error: access denied: (\S+) on (\S+) for (\S+) \({re.escape(POLICIES)}\)(; .+)?")


def where() -> Where:
    return Where(ACCOUNT, os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))


def documents(*flags: str) -> dict[str, dict[str, Any]]:
    """Every principal's document ``kinesis-batch iam-policy`` prints for ``flags``."""
    printed = cli("iam-policy", *flags, "--account", where().account, "--region", where().region)
    assert printed.returncode == 0, printed.stderr
    return dict(json.loads(printed.stdout))


def without(document: dict[str, Any], sid: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``document`` without its statement ``sid``, and that statement."""
    (taken,) = [statement for statement in document["Statement"] if statement["Sid"] == sid]
    return {**document, "Statement": [s for s in document["Statement"] if s is not taken]}, taken


def run_held(flags: tuple[str, ...], enforce: Enforcer, tmp_path: Path, **kw: Any) -> Ran:
    """``kinesis-batch run FLAGS`` with every call held to the policies of ``enforce``."""
    env = kw.pop("env", {})
    with S3Recorder(os.environ["AWS_ENDPOINT_URL_S3"], tmp_path, enforce.principals) as s3, recording(enforce):
        return cli("run", *flags, "--read-limits", "none", env={"AWS_ENDPOINT_URL_S3": s3.url, **env}, **kw)


def assert_the_line_names_a_call_of(ran: Ran, statement: dict[str, Any], principal: str) -> str:
    """The run ended exit 2 as the one line, naming a call that ``statement`` alone allows."""
    assert ran.returncode == 2, ran.stderr[-3000:]
    line = ran.stderr.strip().splitlines()[-1]
    said = LINE.fullmatch(line)
    assert said is not None, line
    action, resource, who, _ = said.groups()
    assert who == principal, line
    alone = {"Statement": [{**statement, "Condition": {}}]}  # the line says no condition's value
    granted = allowed(alone, Request(action, resource), principal)
    assert granted, f"{statement['Sid']} does not grant {action} on {resource} to {principal}"
    return line


def published(output: tuple[str, ...], stream: str) -> dict[str, list[Any]]:
    """The rows of a Delta table on S3 (none before its log's first entry)."""
    bucket, _, prefix = dict(zip(output[::2], output[1::2], strict=True))["--output"][5:].partition("/")
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/_delta_log/")
    return read_rows(sink_of(output, app=default_table(stream), stream=stream)) if listed.get("Contents") else {}


def held_leases(name: str) -> list[str | None]:
    """The owners of the stream's leases (none before its lease table is made)."""
    store = LeaseStore(dynamodb_client(), default_table(name))
    return [lease.lease_owner for lease in store.list_leases()] if store.table_exists() else []


#: The typed run's statements: each fails it before anything is read.
TYPED = ("ReadTheStream", "LeasesCheckpointsAndHistory", "DecodeWithTheRegistry", "OutputFiles", "ListOutputFiles",
         "DeadLettersFiles", "ListDeadLettersFiles")  # fmt: skip


def typed_run_without(
    sid: str, kinesis: Any, name: str, output: tuple[str, ...], tmp_path: Path, spark: Any
) -> tuple[Ran, dict[str, Any]]:
    """A run of Avro records of the registry and a dead letter from ``name`` into ``output``, with
    CloudWatch metrics, by a worker whose document lacks the statement ``sid``; and that statement."""
    registry = registry_stream(kinesis, name)
    flags = ("--stream", name, *output, "--decode", "avro", "--schema", f"glue://{registry}/orders",
             "--metrics", "cloudwatch")  # fmt: skip
    document, statement = without(documents(*flags)["worker"], sid)
    return run_held(
        flags, worker(WORKER, document, where(), arns.stream(name, where())), tmp_path, spark=spark
    ), statement


@pytest.mark.parametrize("sid", TYPED)
def test_a_typed_run_on_s3_whose_worker_lacks_a_statement_ends_as_the_line_naming_its_call(
    sid: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    output = output_args("delta", "s3", tmp_path, monkeypatch)

    ran, statement = typed_run_without(sid, kinesis, name, output, tmp_path, spark)

    assert_the_line_names_a_call_of(ran, statement, WORKER)
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"
    assert published(output, name) == {}, "something was published"


def test_a_run_whose_metrics_are_refused_is_published_and_says_so_in_one_warning_line(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    output = output_args("delta", "s3", tmp_path, monkeypatch)

    ran, _ = typed_run_without("PutTheRunsMetrics", kinesis, name, output, tmp_path, spark)

    # The output is committed before the metrics are sent: failing the run then would only
    # have the next one read nothing new, and the metrics would be lost all the same.
    assert ran.returncode == 0, ran.stderr[-3000:]
    (warning,) = [line for line in ran.stderr.splitlines() if "cloudwatch:PutMetricData" in line]
    assert f"access denied: cloudwatch:PutMetricData on * for {WORKER} ({POLICIES})" in warning, warning
    assert len(read_rows(sink_of(output, app=default_table(name), stream=name))["id"]) == 4


@pytest.mark.parametrize("sid", ["OutputTable", "DeadLettersTable"])
def test_a_run_into_iceberg_on_glue_whose_worker_lacks_a_catalog_statement_ends_as_the_line(
    sid: str, kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 4, payload=lambda i: json.dumps({"id": i}).encode())
    flags = ("--stream", name, *output_args("iceberg", "glue", tmp_path, monkeypatch), "--decode", "json")
    document, statement = without(documents(*flags)["worker"], sid)

    ran = run_held(flags, worker(WORKER, document, where(), arns.stream(name, where())), tmp_path, spark=spark)

    assert_the_line_names_a_call_of(ran, statement, WORKER)
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"


@pytest.mark.parametrize(
    ("principal", "sid", "refused"),
    [
        ("worker", "AssumeTheStreamsRole", WORKER),
        ("reader-trust", "TrustTheConsumersAccount", WORKER),  # the role's trust policy
        ("reader", "ReadTheStream", READER),
    ],
)
@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no StreamARN
def test_a_stream_read_through_its_role_whose_policies_lack_a_statement_ends_as_the_line(
    principal: str,
    sid: str,
    refused: str,
    kinesis: Any,
    streams: StreamFactory,
    stack: LocalStack,
    spark: Any,
    tmp_path: Path,
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 4)
    stream = str(kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])
    role = ROLE_ARN
    flags = ("--stream", stream, "--role-arn", role, "--external-id", "lake-1", "--output", str(tmp_path / "out"))
    docs = documents(*flags)
    docs[principal], statement = without(docs[principal], sid)
    # The worker signs with its key; the role's keys are moto's STS's, whichever it hands out.
    held = {os.environ["AWS_ACCESS_KEY_ID"]: Principal(WORKER, docs["worker"]), "*": Principal(READER, docs["reader"])}
    enforce = Enforcer(held, where(), stream, resources={role: docs["reader-trust"]})

    ran = run_held(flags, enforce, tmp_path, env={"AWS_ENDPOINT_URL_STS": stack.dynamodb.url}, spark=spark)

    assert_the_line_names_a_call_of(ran, statement, refused)
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"


@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no StreamARN
def test_a_stream_of_another_account_shared_by_its_policy_without_the_statement_ends_as_the_line(
    kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 4)
    stream = str(kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])
    consumer = Where("222222222222", where().region)  # the worker's account: not the stream's
    ours = f"arn:aws:sts::{consumer.account}:assumed-role/airflow-worker/i-0abc"  # the consumer's worker
    flags = ("--stream", stream, "--output", str(tmp_path / "out"))
    printed = cli("iam-policy", *flags, "--account", consumer.account, "--region", consumer.region)
    assert printed.returncode == 0, printed.stderr
    docs = json.loads(printed.stdout)
    shared, statement = without(docs["stream-policy"], "ShareTheStream")
    held = {os.environ["AWS_ACCESS_KEY_ID"]: Principal(ours, docs["worker"])}

    ran = run_held(flags, Enforcer(held, consumer, stream, resources={stream: shared}), tmp_path, spark=spark)
    again = run_held(flags, Enforcer(held, consumer, stream, resources={stream: docs["stream-policy"]}), tmp_path,
                     spark=spark)  # fmt: skip

    assert_the_line_names_a_call_of(ran, statement, ours)
    assert again.returncode == 0, again.stderr[-3000:]  # with the statement, the same run passes


@pytest.mark.parametrize(
    ("role", "principal", "sid"),
    [
        ("", "kms", "LetTheConsumerDecrypt"),
        ("", "worker", "DecryptTheStream"),
        (ROLE_ARN, "kms", "LetTheConsumerDecrypt"),
        (ROLE_ARN, "", ""),  # the key policy names the role: the reader's own document needs no statement
    ],
)
@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no encryption
def test_a_stream_whose_key_the_policies_do_not_let_the_reader_use_is_named_before_any_read(
    role: str,
    principal: str,
    sid: str,
    kinesis: Any,
    streams: StreamFactory,
    stack: LocalStack,
    spark: Any,
    tmp_path: Path,
) -> None:
    name, key = encrypted_stream(kinesis, streams, "111111111111" if role else ACCOUNT)
    # Through the role, the stream is named by its ARN (kinesis-local's account); else by its name.
    arn = str(kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])
    stream, named = (arn, arn) if role else (arns.stream(name, where()), name)
    flags = ("--stream", named, *(("--role-arn", role) if role else ()), "--output", str(tmp_path / "out"))
    docs = documents(*flags, "--kms-key", key)
    if sid:
        docs[principal], _ = without(docs[principal], sid)
    held = {os.environ["AWS_ACCESS_KEY_ID"]: Principal(WORKER, docs["worker"])}
    if role:  # the role's keys are moto's STS's, whichever it hands out
        held["*"] = Principal(READER, docs["reader"])
    resources = {key: docs["kms"], **({role: docs["reader-trust"]} if role else {})}
    enforce = Enforcer(held, where(), stream, resources, {stream: key})

    ran = run_held(flags, enforce, tmp_path, env={"AWS_ENDPOINT_URL_STS": stack.dynamodb.url}, spark=spark)

    if not sid:
        assert ran.returncode == 0, ran.stderr[-3000:]
        return
    assert ran.returncode == 2, ran.stderr[-3000:]
    line = ran.stderr.strip().splitlines()[-1]
    assert line == (
        f"kinesis-batch: error: access denied: kms:Decrypt on {key}, the KMS key stream {name} is encrypted with, "
        f"for its reader (KMSAccessDeniedException: {KMS_DENIED}) (kinesis-batch iam-policy --kms-key {key} prints "
        "the policies each principal needs); nothing was published"
    ), line
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"


@pytest.mark.parametrize("sid", ["StartJobRuns", "PassTheJobRole", "WatchAndCancelJobRuns", "TheEnvironmentArchive"])
def test_a_job_run_whose_orchestrator_lacks_a_statement_ends_as_the_line(
    sid: str,
    emr_serverless: StandIn,
    kinesis: Any,
    streams: StreamFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 4)
    application = emr_serverless.application()
    # Queued until polled a thousand times: a job run that is started never runs Spark here.
    emr_serverless.behave(application, queued_polls=1000)
    environment = emr_serverless.environment(runs=False)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    flags = ("--stream", name, *output, "--emr-serverless-application", application, "--execution-role", ROLE,
             "--environment", environment)  # fmt: skip
    document, statement = without(documents(*flags)["worker"], sid)

    ran = run_held(flags, worker(WORKER, document, where(), arns.stream(name, where())), tmp_path)

    if sid == "TheEnvironmentArchive":
        # The archive's check is a HEAD, which S3 refuses with no body: nobody is told who was
        # refused what. The line names the archive and the request.
        assert ran.returncode == 2, ran.stderr[-3000:]
        (line,) = ran.stderr.strip().splitlines()
        assert line.startswith(f"kinesis-batch: error: access denied: {environment}: "), line
        assert "ACCESS_DENIED during HeadObject" in line and line.endswith(f"({POLICIES})"), line
    else:
        assert_the_line_names_a_call_of(ran, statement, WORKER)
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"
    assert published(output, name) == {}, "something was published"


EXECUTORS_KEY = "AKIAEXECUTORS0000001"  # what the Spark tasks sign with here, as executors with their role
EXECUTORS = f"arn:aws:sts::{ACCOUNT}:assumed-role/spark-executors/i-0abc"


@contextmanager
def tasks_signing_as_executors(spark: Any) -> Iterator[None]:
    """The Spark tasks of local Spark sign with :data:`EXECUTORS_KEY`: their Python workers take
    the context's environment, as a cluster's executors take their own role's credentials."""
    environment = spark.session.sparkContext.environment
    environment["AWS_ACCESS_KEY_ID"] = EXECUTORS_KEY
    try:
        yield
    finally:
        del environment["AWS_ACCESS_KEY_ID"]


@pytest.mark.parametrize("sid", ["ReadTheRecords", "OutputFiles", "DeadLettersFiles", "DecodeWithTheRegistry"])
def test_a_read_whose_executors_lack_a_statement_ends_as_the_line_from_the_spark_task(
    sid: str,
    proxies: tuple[LimitsProxy, LimitsProxy],
    kinesis: Any,
    streams: StreamFactory,
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kinesis_proxy, _ = proxies
    name = streams.create(shards=1)
    # Records of an older version: the tasks ask the registry for it themselves; and a dead letter.
    registry = registry_stream(kinesis, name, older=True)
    output = output_args("delta", "s3", tmp_path, monkeypatch)
    flags = ("--stream", name, *output, "--decode", "avro", "--schema", f"glue://{registry}/orders")
    docs = documents(*flags)
    executors, statement = without(docs["executors"], sid)
    held = {
        os.environ["AWS_ACCESS_KEY_ID"]: Principal(WORKER, docs["worker"]),
        EXECUTORS_KEY: Principal(EXECUTORS, executors),
    }
    stream = arns.stream(name, where())
    kinesis_proxy.authorize(refusing(held, proxied("kinesis", where(), stream=stream)))

    with (
        LimitsProxy(str(glue_client().meta.endpoint_url), control=ControlLimits.none()) as glue,
        tasks_signing_as_executors(spark),
    ):
        glue.authorize(refusing(held, proxied("glue", where(), schema=(registry, "orders"))))
        env = {"AWS_ENDPOINT_URL_KINESIS": kinesis_proxy.url, "AWS_ENDPOINT_URL_GLUE": glue.url}
        ran = run_held(flags, Enforcer(held, where(), stream), tmp_path, env=env, spark=spark)

    assert_the_line_names_a_call_of(ran, statement, EXECUTORS)
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"
    assert published(output, name) == {}, "something was published"


@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no StreamARN
def test_a_read_through_a_role_the_executors_may_not_assume_ends_as_the_line_from_the_spark_task(
    kinesis: Any, streams: StreamFactory, stack: LocalStack, spark: Any, tmp_path: Path
) -> None:
    name = streams.create(shards=1)
    put(kinesis, name, 4)
    stream = str(kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])
    flags = ("--stream", stream, "--role-arn", ROLE_ARN, "--output", str(tmp_path / "out"))
    docs = documents(*flags)
    executors, statement = without(docs["executors"], "AssumeTheStreamsRole")
    held = {
        os.environ["AWS_ACCESS_KEY_ID"]: Principal(WORKER, docs["worker"]),
        EXECUTORS_KEY: Principal(EXECUTORS, executors),
    }

    # The tasks assume the role at the driver's STS endpoint (it travels in their spec): this one.
    with (
        LimitsProxy(stack.dynamodb.url, control=ControlLimits.none()) as sts,
        tasks_signing_as_executors(spark),
    ):
        sts.authorize(refusing(held, proxied("sts", where(), role=ROLE_ARN)))
        ran = run_held(flags, Enforcer(held, where(), stream), tmp_path, env={"AWS_ENDPOINT_URL_STS": sts.url},
                       spark=spark)  # fmt: skip

    assert_the_line_names_a_call_of(ran, statement, EXECUTORS)
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"


@pytest.mark.parametrize("emulator", ["kinesis-local"], indirect=True)  # kinesalite knows no encryption
def test_a_read_whose_executors_may_not_use_the_streams_key_ends_as_the_line_from_the_spark_task(
    proxies: tuple[LimitsProxy, LimitsProxy], kinesis: Any, streams: StreamFactory, spark: Any, tmp_path: Path
) -> None:
    kinesis_proxy, _ = proxies
    name, key = encrypted_stream(kinesis, streams, ACCOUNT)
    flags = ("--stream", name, "--output", str(tmp_path / "out"))
    docs = documents(*flags, "--kms-key", key)
    executors, _ = without(docs["executors"], "DecryptTheStream")
    decrypt = kms_decrypt(key, where())
    assert allowed(docs["worker"], decrypt) and not allowed(executors, decrypt)

    def kinesis_decrypts(operation: str, signer: str, _: str) -> tuple[str, str] | None:
        # Kinesis decrypts a GetRecords' records with the key for its caller; the key's policy
        # names the account's root, so the caller's own policy decides.
        document = executors if signer == EXECUTORS_KEY else docs["worker"]
        return (
            None
            if operation != "GetRecords" or allowed(document, decrypt)
            else ("KMSAccessDeniedException", KMS_DENIED)
        )

    kinesis_proxy.authorize(kinesis_decrypts)
    with tasks_signing_as_executors(spark):
        ran = cli(
            "run", *flags, "--read-limits", "none", env={"AWS_ENDPOINT_URL_KINESIS": kinesis_proxy.url}, spark=spark
        )

    assert ran.returncode == 2, ran.stderr[-3000:]
    line = ran.stderr.strip().splitlines()[-1]
    assert line.startswith("kinesis-batch: error: access denied: kms:Decrypt of the records of "), line
    assert f"(KMSAccessDeniedException: {KMS_DENIED}) ({POLICIES}); nothing was published" in line, line
    assert kinesis_proxy.calls["GetRecords"] >= 2, "the task's read, not the run's look for news, was refused"
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"


JOB_KEY = "AKIAJOBRUNEXECUTORS1"  # the job role's, given to the job run: its calls are the executors'
JOB_ROLE = f"arn:aws:sts::{ACCOUNT}:assumed-role/kinesis-batch-job/00run"


@pytest.mark.parametrize(
    ("sid", "kind"),
    [("ReadTheLeases", "delta s3"), ("ListOutputFiles", "delta s3"), ("ListDeadLettersFiles", "delta s3"),
     ("FindOutputTable", "iceberg glue")],
)  # fmt: skip
def test_a_job_run_whose_role_lacks_a_statement_of_its_own_driver_ends_as_the_line(
    sid: str,
    kind: str,
    proxies: tuple[LimitsProxy, LimitsProxy],
    emr_serverless: StandIn,
    kinesis: Any,
    streams: StreamFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The read step's own driver (a job run's) makes these calls, which a local run's tasks never
    make: the job run's calls, signed with the job role's key, are held to the executors' document."""
    kinesis_proxy, dynamodb_proxy = proxies
    name = streams.create(shards=1)
    put(kinesis, name, 3, payload=lambda i: json.dumps({"id": i}).encode())
    put(kinesis, name, 1, start=3, payload=lambda i: b"not json")  # the dead letters' too
    output = (*output_args(*kind.split(), tmp_path, monkeypatch), "--decode", "json")
    base = ("--emr-serverless-application", emr_serverless.application(), "--execution-role", ROLE,
            "--environment", emr_serverless.environment())  # fmt: skip
    executors, statement = without(documents("--stream", name, *output, *base)["executors"], sid)
    held = {JOB_KEY: Principal(JOB_ROLE, executors)}
    dynamodb_proxy.authorize(refusing(held, proxied("dynamodb", where())))

    with (
        S3Recorder(os.environ["AWS_ENDPOINT_URL_S3"], tmp_path, held) as s3,
        LimitsProxy(str(glue_client().meta.endpoint_url), control=ControlLimits.none()) as glue,
    ):
        glue.authorize(refusing(held, proxied("glue", where())))
        endpoints = {"KINESIS": kinesis_proxy.url, "DYNAMODB": dynamodb_proxy.url, "S3": s3.url, "GLUE": glue.url}
        job = (*base, *driver_conf(endpoints, JOB_KEY))
        # The spec carries the orchestrator's S3 and Glue endpoints to the job: these.
        passed = {"AWS_ENDPOINT_URL_S3": s3.url, "AWS_ENDPOINT_URL_GLUE": glue.url}
        ran = cli("run", "--stream", name, *output, "--read-limits", "none", *job, env=passed)

    line = assert_the_line_names_a_call_of(ran, statement, JOB_ROLE)
    assert "EMR Serverless job run" in line and line.endswith(")") and "nothing was published" in line, line
    assert [owner for owner in held_leases(name) if owner] == [], "a lease left held"
    if kind == "delta s3":
        assert published(output[:4], name) == {}, "something was published"
