"""A stand-in for EMR Serverless whose job runs really run: the local stack's EMR Serverless endpoint.

moto serves EMR Serverless' API, but its job runs are born SUCCESS and run nothing. This server
answers the calls a read step's job run makes (CreateApplication, GetApplication, StartJobRun,
GetJobRun, ListJobRuns, CancelJobRun, GetDashboardForJobRun) itself, in botocore's REST-JSON
shapes, and runs each job run as EMR Serverless would, on this machine:

- the job driver's entry point and the ``spark.archives`` of its ``spark-defaults`` are fetched
  from S3 (moto's, through the standard AWS environment this server is started with), the
  archive unpacked as ``./<alias>`` in the job's working folder, where EMR Serverless unpacks it
  in each container: here there is one, the driver's, whose local executors start in the same
  folder (an archive is unpacked once per ETag and linked into each job run's folder);
- ``spark-submit --master local[2]`` runs the entry point with its arguments and every Spark
  setting; ``spark.emr-serverless.driverEnv.X`` become the driver's environment;
- the image's interpreters are this machine's: ``--image-python /usr/bin/python3.11=PATH``
  maps a path the release's image has to a Python here (the tests give a bare one: nothing
  installed, so the job gets kinesis-batch and its dependencies from the archive alone);
- the state moves SUBMITTED, (QUEUED,) SCHEDULED, RUNNING, then SUCCESS or FAILED as the
  process exits (0 or not; ``stateDetails`` carries the last line of its output), CANCELLING
  and CANCELLED on CancelJobRun (SIGTERM to the job's process group, SIGKILL 10 s later), and
  FAILED past ``executionTimeoutMinutes``;
- ``billedResourceUtilization`` bills one worker of 4 vCPU, 16 GB and 20 GB of disk (EMR
  Serverless' default worker) for the job's time, with EMR's one-minute minimum.

Tests change an application's behaviour through ``POST /_standin/applications/{id}``
(``{"queued_seconds": S}``: each job run waits that long in QUEUED; ``{"queued_polls": N}``:
it stays QUEUED until GetJobRun has answered QUEUED N times, however slow the machine;
``{"lie": true}``: job runs say SUCCESS without running), and read how often a job run's states were polled at
``GET /_standin/jobruns/{id}``: paths of this server only.

    python -m devkit.emr_serverless -p PORT --work DIR [--image-python IMAGE_PATH=LOCAL_PATH ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import tarfile
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

ACCOUNT = "123456789012"  # moto's: the only account the local stack has
REGION = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
WORKER = {"vCPU": 4, "memoryGB": 16, "storageGB": 20}
DRIVER_ENV = "spark.emr-serverless.driverEnv."
_ROLE = re.compile(r"arn:aws[a-z-]*:iam::(\d{12}):role/.+")
ENDED = {"SUCCESS", "FAILED", "CANCELLED"}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


class Job:
    """One job run: its record (GetJobRun's shape) and the process that runs it."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.cancelled = threading.Event()
        self.started = 0.0
        self.polls: dict[str, int] = {}  # GetJobRun calls answered, by the state they saw
        self.queued_polls = 0  # with the queued_polls behaviour: QUEUED until that many polls saw it
        self.polled_enough = threading.Event()

    def set(self, state: str, details: str = "") -> None:
        with self.lock:
            if self.record["state"] in ENDED:
                return
            self.record.update(state=state, updatedAt=time.time())
            if details:
                self.record["stateDetails"] = details
            if state == "RUNNING":
                self.started = time.monotonic()
                self.record["startedAt"] = time.time()
            if state in ENDED:
                self.record["endedAt"] = time.time()
                seconds = time.monotonic() - self.started if self.started else 0.0
                billed = max(seconds, 60.0) / 3600  # EMR Serverless bills a worker at least a minute
                self.record["totalExecutionDurationSeconds"] = int(seconds)
                self.record["billedResourceUtilization"] = {
                    "vCPUHour": round(WORKER["vCPU"] * billed, 6),
                    "memoryGBHour": round(WORKER["memoryGB"] * billed, 6),
                    "storageGBHour": round(WORKER["storageGB"] * billed, 6),
                }


class StandIn:
    def __init__(self, work: Path, images: dict[str, str]) -> None:
        self.work = work
        self.images = images
        self.applications: dict[str, dict[str, Any]] = {}
        self.behaviour: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, Job] = {}
        self.lock = threading.Lock()
        self.unpacking = threading.Lock()

    # -- the API ----------------------------------------------------------------------------------

    def create_application(self, body: dict[str, Any]) -> dict[str, Any]:
        application_id = uuid.uuid4().hex[:16]
        arn = f"arn:aws:emr-serverless:{REGION}:{ACCOUNT}:/applications/{application_id}"
        self.applications[application_id] = {
            "applicationId": application_id,
            "name": body.get("name", application_id),
            "arn": arn,
            "releaseLabel": body["releaseLabel"],
            "type": body["type"],
            "state": "CREATED",
            "architecture": body.get("architecture", "X86_64"),
            "createdAt": time.time(),
            "updatedAt": time.time(),
            "autoStartConfiguration": {"enabled": True},
        }
        self.behaviour[application_id] = {}
        return {"applicationId": application_id, "name": body.get("name", ""), "arn": arn}

    def application(self, application_id: str) -> dict[str, Any]:
        found = self.applications.get(application_id)
        if found is None:
            raise ApiError(404, "ResourceNotFoundException", f"Application {application_id} does not exist")
        return found

    def start_job_run(self, application_id: str, body: dict[str, Any]) -> dict[str, Any]:
        application = self.application(application_id)
        role = _ROLE.fullmatch(body.get("executionRoleArn", ""))
        if role is None or role.group(1) != ACCOUNT:
            raise ApiError(
                400, "ValidationException", f"Execution role {body.get('executionRoleArn')} cannot be passed"
            )
        with self.lock:
            for job in self.jobs.values():  # the client token makes a retried start one job run
                if job.record.get("_token") == body.get("clientToken") and body.get("clientToken"):
                    return _started(job.record)
            job_run_id = uuid.uuid4().hex[:16]
            record = {
                "applicationId": application_id,
                "jobRunId": job_run_id,
                "name": body.get("name", ""),
                "arn": f"{application['arn']}/jobruns/{job_run_id}",
                "createdBy": "standin",
                "createdAt": time.time(),
                "updatedAt": time.time(),
                "executionRole": body["executionRoleArn"],
                "state": "SUBMITTED",
                "stateDetails": "",
                "releaseLabel": application["releaseLabel"],
                "configurationOverrides": body.get("configurationOverrides", {}),
                "jobDriver": body["jobDriver"],
                "tags": body.get("tags", {}),
                "executionTimeoutMinutes": body.get("executionTimeoutMinutes", 720),
                "_token": body.get("clientToken"),
            }
            job = self.jobs[job_run_id] = Job(record)
        application["state"] = "STARTED"
        behaviour = dict(self.behaviour[application_id])
        threading.Thread(target=self._execute, args=(job, behaviour), daemon=True).start()
        return _started(record)

    def job(self, application_id: str, job_run_id: str) -> Job:
        self.application(application_id)
        job = self.jobs.get(job_run_id)
        if job is None or job.record["applicationId"] != application_id:
            raise ApiError(404, "ResourceNotFoundException", f"Job run {job_run_id} does not exist")
        return job

    def get_job_run(self, application_id: str, job_run_id: str) -> dict[str, Any]:
        job = self.job(application_id, job_run_id)
        with job.lock:
            job.polls[job.record["state"]] = job.polls.get(job.record["state"], 0) + 1
            if job.record["state"] == "QUEUED" and job.polls["QUEUED"] >= job.queued_polls:
                job.polled_enough.set()
            return {"jobRun": {k: v for k, v in job.record.items() if not k.startswith("_")}}

    def polls(self, job_run_id: str) -> dict[str, Any]:
        """The stand-in's own: how often each state of the job run was polled."""
        job = self.jobs.get(job_run_id)
        if job is None:
            raise ApiError(404, "ResourceNotFoundException", f"Job run {job_run_id} does not exist")
        return {"polls": dict(job.polls)}

    def list_job_runs(self, application_id: str, query: dict[str, list[str]]) -> dict[str, Any]:
        self.application(application_id)
        wanted = set(query.get("states", []))
        runs = []
        for job in sorted(self.jobs.values(), key=lambda job: -job.record["createdAt"]):
            record = job.record
            if record["applicationId"] == application_id and (not wanted or record["state"] in wanted):
                keys = ("applicationId", "name", "arn", "createdBy", "createdAt", "updatedAt", "executionRole")
                runs.append(
                    {"id": record["jobRunId"], **{k: record[k] for k in keys}, "state": record["state"]}
                    | {"stateDetails": record["stateDetails"], "releaseLabel": record["releaseLabel"], "type": "Spark"}
                )
        return {"jobRuns": runs}

    def cancel_job_run(self, application_id: str, job_run_id: str) -> dict[str, Any]:
        job = self.job(application_id, job_run_id)
        if job.record["state"] in ENDED:
            raise ApiError(400, "ValidationException", f"Job run {job_run_id} is {job.record['state']}")
        job.set("CANCELLING")
        job.cancelled.set()
        threading.Thread(target=self._stop, args=(job,), daemon=True).start()
        return {"applicationId": application_id, "jobRunId": job_run_id}

    def set_behaviour(self, application_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """The stand-in's own: how the application's next job runs behave (queued, lying)."""
        self.application(application_id)
        self.behaviour[application_id].update(body)
        return {}

    def dashboard(self, application_id: str, job_run_id: str) -> dict[str, Any]:
        job = self.job(application_id, job_run_id)  # the stand-in's "Spark UI" is the driver's output
        return {"url": (self.work / job.record["jobRunId"] / "driver.log").as_uri()}

    # -- running a job --------------------------------------------------------------------------

    def _execute(self, job: Job, behaviour: dict[str, Any]) -> None:
        try:
            queued = float(behaviour.get("queued_seconds") or 0)
            job.queued_polls = int(behaviour.get("queued_polls") or 0)
            if queued or job.queued_polls:
                job.set("QUEUED")
                if job.cancelled.wait(queued):
                    return
                while job.queued_polls and not job.polled_enough.wait(0.05):
                    if job.cancelled.is_set():
                        return
            job.set("SCHEDULED")
            if job.cancelled.wait(0.2):
                return
            job.set("RUNNING")
            if behaviour.get("lie"):
                job.set("SUCCESS")
                return
            self._run(job)
        except Exception as exc:  # the stand-in's own failure is the job run's, as on AWS
            job.set("FAILED", f"Job failed to start: {type(exc).__name__}: {exc}")

    def _run(self, job: Job) -> None:
        folder = self.work / job.record["jobRunId"]
        folder.mkdir(parents=True)
        driver = job.record["jobDriver"]["sparkSubmit"]
        conf = dict(_spark_defaults(job.record["configurationOverrides"]))
        env = dict(os.environ)
        for key in [k for k in conf if k.startswith(DRIVER_ENV)]:
            env[key.removeprefix(DRIVER_ENV)] = self._image(conf.pop(key))
        for key in [k for k in conf if k.startswith("spark.executorEnv.")]:
            conf[key] = self._image(conf[key])
        if "spark.archives" in conf:
            # One container: the driver's, whose local executors start in its working folder,
            # where the archive is unpacked as EMR Serverless unpacks it; Spark need not unpack it
            # again. Unpacked once per version of the object (its ETag), linked into each job.
            uri, _, alias = conf.pop("spark.archives").partition("#")
            (folder / (alias or Path(uri).name)).symlink_to(self._unpacked(uri), target_is_directory=True)
        entry = _download(driver["entryPoint"], folder)
        import pyspark  # the release's Spark: this machine's

        home = Path(pyspark.__file__).parent
        env["SPARK_HOME"] = str(home)
        spark_submit = home / "bin" / "spark-submit"
        # This machine's Spark as the release's: started as local Spark starts here (the class
        # archive: seconds of CPU less a job), without a UI; the job's own settings win.
        from kinesis_batch.spark.session import local_jvm_options

        conf = {"spark.driver.extraJavaOptions": local_jvm_options(), "spark.ui.enabled": "false", **conf}
        command = [str(spark_submit), "--master", "local[2]", "--name", job.record["name"]]
        for key, value in sorted(conf.items()):
            command += ["--conf", f"{key}={value}"]
        command += [str(entry), *driver.get("entryPointArguments", [])]
        with (folder / "driver.log").open("wb") as log:
            process = subprocess.Popen(
                command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        job.process = process
        if job.cancelled.is_set():
            self._stop(job)
        timeout = float(job.record["executionTimeoutMinutes"]) * 60
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            job.set("FAILED", f"Job run timed out after {job.record['executionTimeoutMinutes']} minutes")
            return
        if job.cancelled.is_set():
            job.set("CANCELLED", "Job run was cancelled")
        elif code == 0:
            job.set("SUCCESS")
        else:
            last = _last_line(folder / "driver.log")
            job.set("FAILED", f"Job failed, please check complete logs in configured logging destination. "
                              f"ExitCode: {code}. Last line: {last}")  # fmt: skip

    def _unpacked(self, uri: str) -> Path:
        """The archive at ``uri`` unpacked, fetched from S3 unless this version of it was already."""
        import boto3

        bucket, _, key = uri.removeprefix("s3://").partition("/")
        etag = boto3.client("s3").head_object(Bucket=bucket, Key=key)["ETag"].strip('"')
        target = self.work / "archives" / etag
        with self.unpacking:  # two job runs starting together unpack it once
            if not target.exists():
                staging = self.work / "archives" / f".{etag}-{uuid.uuid4().hex[:6]}"
                staging.mkdir(parents=True)
                local = _download(uri, staging)
                with tarfile.open(local) as archive:
                    archive.extractall(staging / "unpacked", filter="data")
                local.unlink()
                (staging / "unpacked").rename(target)
        return target

    def _stop(self, job: Job) -> None:
        process = job.process
        if process is None:  # not started: the run thread sees the cancel
            job.set("CANCELLED", "Job run was cancelled")
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill(process)
        job.set("CANCELLED", "Job run was cancelled")

    def _image(self, value: str) -> str:
        return self.images.get(value, value)

    def stop_all(self) -> None:
        for job in list(self.jobs.values()):
            if job.process is not None and job.process.poll() is None:
                _kill(job.process)


def _started(record: dict[str, Any]) -> dict[str, Any]:
    return {"applicationId": record["applicationId"], "jobRunId": record["jobRunId"], "arn": record["arn"]}


def _spark_defaults(overrides: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in overrides.get("applicationConfiguration", []):
        if item.get("classification") == "spark-defaults":
            found.update({str(k): str(v) for k, v in item.get("properties", {}).items()})
    return found


def _download(uri: str, folder: Path) -> Path:
    """An s3:// object into ``folder`` (through moto's S3: the standard AWS environment)."""
    import boto3

    bucket, _, key = uri.removeprefix("s3://").partition("/")
    target = folder / key.rsplit("/", 1)[-1]
    boto3.client("s3").download_file(bucket, key, str(target))
    return target


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""


JOB = r"/applications/([^/]+)/jobruns/([^/]+)"


def _handler(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    # (method, path, the call with the path's parts, the body and the query)
    routes: list[tuple[str, re.Pattern[str], Callable[..., dict[str, Any]]]] = [
        ("POST", re.compile(r"/applications"), lambda body, query: stand_in.create_application(body)),
        ("GET", re.compile(r"/applications/([^/]+)"), lambda a, body, query: {"application": stand_in.application(a)}),
        ("POST", re.compile(r"/applications/([^/]+)/jobruns"), lambda a, body, query: stand_in.start_job_run(a, body)),
        ("GET", re.compile(r"/applications/([^/]+)/jobruns"), lambda a, body, query: stand_in.list_job_runs(a, query)),
        ("GET", re.compile(f"{JOB}"), lambda a, j, *_: stand_in.get_job_run(a, j)),
        ("DELETE", re.compile(f"{JOB}"), lambda a, j, *_: stand_in.cancel_job_run(a, j)),
        ("GET", re.compile(f"{JOB}/dashboard"), lambda a, j, *_: stand_in.dashboard(a, j)),
        ("POST", re.compile(r"/_standin/applications/([^/]+)"), lambda a, body, query: stand_in.set_behaviour(a, body)),
        ("GET", re.compile(r"/_standin/jobruns/([^/]+)"), lambda j, *_: stand_in.polls(j)),
    ]

    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            url = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            query = parse_qs(url.query)
            try:
                for verb, pattern, call in routes:
                    match = pattern.fullmatch(url.path)
                    if verb == method and match:
                        answer = call(*(unquote(g) for g in match.groups()), body, query)
                        self._send(200, answer)
                        return
                raise ApiError(404, "UnknownOperationException", f"{method} {url.path}")
            except ApiError as exc:
                self._send(exc.status, {"message": str(exc)}, error=exc.code)

        def _send(self, status: int, body: dict[str, Any], error: str = "") -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if error:
                self.send_header("x-amzn-ErrorType", error)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    parser.add_argument("--work", type=Path, required=True, help="where job runs keep their files and output")
    parser.add_argument("--image-python", action="append", default=[], metavar="IMAGE_PATH=LOCAL_PATH")
    args = parser.parse_args(argv)
    images = dict(pair.split("=", 1) for pair in args.image_python)
    stand_in = StandIn(args.work, images)
    server = ThreadingHTTPServer((args.host, args.port), _handler(stand_in))

    def stop(signum: int, frame: Any) -> None:
        stand_in.stop_all()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    finally:
        stand_in.stop_all()


if __name__ == "__main__":
    main()
