"""Session fixtures: real local endpoints as separate processes, reset between tests; Airflow
(a SQLite metadata DB in a temporary AIRFLOW_HOME, the repo's dags/ folder, and the aws_default
connection pointing at the local stack) for the tests that ask for it.

One moto_server (DynamoDB), one kinesalite and one kinesis-local per test session, each on a
free loopback port in its own process group. boto3 finds them through the standard AWS
environment variables, so Spark workers and Airflow tasks (child processes) find them too.
Between tests: moto is reset through its API and each test's streams are deleted.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from devkit.stack import (
    PUSHGATEWAY,
    STATIC_ENV,
    LocalStack,
    local_stack,
    migrate_airflow_db,
    start_emr_serverless,
    start_pushgateway,
)
from hypothesis import settings

from kinesis_batch import aws
from kinesis_batch.control.pacing import PACER
from tests.serverless.standin import IMAGE_PYTHON, StandIn, bare_python, shared_archive
from tests.streams import StreamFactory

EMULATORS = ("kinesalite", "kinesis-local")
#: The emulator of every test that does not ask for both: kinesalite, unless
#: ``KINESIS_BATCH_TEST_KINESIS=kinesis-local`` runs the whole suite (or a part) on the other.
DEFAULT_EMULATOR = os.environ.get("KINESIS_BATCH_TEST_KINESIS") or "kinesalite"
if DEFAULT_EMULATOR not in EMULATORS:
    raise pytest.UsageError(f"KINESIS_BATCH_TEST_KINESIS={DEFAULT_EMULATOR!r}: expected one of {', '.join(EMULATORS)}")
DAGS = Path(__file__).resolve().parents[1] / "dags"

# Hypothesis' deadline is a wall-clock assertion: an example that meets a one-off import (PySpark's
# converters import pandas on their first NumPy value) or a busy moment of a 2-core machine fails
# it. Speed is printed by the benchmarks, never asserted by a test.
settings.register_profile("kinesis-batch", deadline=None)
settings.load_profile("kinesis-batch")


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with local_stack(EMULATORS, log_dir=tmp_path_factory.mktemp("stack-logs")) as running:
        yield running


@pytest.fixture(scope="session")
def pushgateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Prometheus Pushgateway's URL (Debian's, which tools/bootstrap.sh installs as root)."""
    if not Path(PUSHGATEWAY).exists():
        pytest.skip(f"{PUSHGATEWAY} is needed (tools/bootstrap.sh installs prometheus-pushgateway as root)")
    server = start_pushgateway(tmp_path_factory.mktemp("pushgateway-logs"))
    try:
        yield server.url
    finally:
        server.stop()


def _build_archive_early(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A pytest worker whose tests need the environment archive starts building it now, beside
    its first tests, instead of when the first of them asks for it while the other workers wait
    on the same build (pip resolving for half a minute). The fixture then finds it built, or
    waits for the rest of the build (shared_archive's lock)."""
    basetemp = getattr(config.option, "basetemp", None)
    if not basetemp or not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: nobody waits on another
    if any("environment_archive_file" in getattr(item, "fixturenames", ()) for item in items):
        threading.Thread(target=shared_archive, args=(Path(basetemp).parent,), daemon=True).start()


@pytest.fixture(scope="session")
def environment_archive_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``kinesis-batch package``'s archive for this machine's Python (standin.PYTHON), one for the whole run
    (its pytest workers' temporary folders share a parent made for the run)."""
    base = tmp_path_factory.getbasetemp()
    return shared_archive(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)


@pytest.fixture(scope="session")
def emr_serverless_standin(
    stack: LocalStack, tmp_path_factory: pytest.TempPathFactory, environment_archive_file: Path
) -> Iterator[StandIn]:
    """The EMR Serverless stand-in, its image's Python 3.11 a bare one, and the environment
    archive ``kinesis-batch package`` builds for it."""
    python = bare_python(tmp_path_factory.mktemp("image") / "python3.11")
    archive = environment_archive_file
    env = {**stack.env(DEFAULT_EMULATOR), "SPARK_LOCAL_IP": "127.0.0.1"}
    server = start_emr_serverless(tmp_path_factory.mktemp("emr-serverless"), env, {IMAGE_PYTHON: python})
    try:
        yield StandIn(server, archive)
    finally:
        server.stop()


@pytest.fixture
def emr_serverless(emr_serverless_standin: StandIn, monkeypatch: pytest.MonkeyPatch) -> StandIn:
    """The stand-in as this test's EMR Serverless endpoint, polled every half second."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_EMR_SERVERLESS", emr_serverless_standin.url)
    monkeypatch.setenv("KINESIS_BATCH_EMR_SERVERLESS_POLL_SECONDS", "0.5")
    return emr_serverless_standin


#: ``make check``: only the tests that start no process (no emulator, moto, Spark or Airflow).
FAST = os.environ.get("KINESIS_BATCH_TESTS") == "fast"
#: The fixtures that start processes (directly, or through the stack they need).
PROCESSES = frozenset(
    {
        "stack",
        "emulator",
        "kinesis",
        "dynamodb",
        "streams",
        "spark",
        "airflow_home",
        "pushgateway",
        "emr_serverless",
        "environment_archive_file",  # pip resolves wheels
    }
)
#: Where a fast test's AWS calls go: a closed port, so a test that needs the stack without saying
#: so fails at once instead of reaching a real endpoint.
NOWHERE = "http://127.0.0.1:9"


@pytest.fixture(autouse=True)
def fresh_pace() -> None:
    """Each test starts with the control plane's pace of a new process: a test that throttled
    DescribeStreamSummary must not slow the next one's first call."""
    PACER.forget()


@pytest.fixture(autouse=True)
def aws_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the standard AWS environment at the stack (DEFAULT_EMULATOR); reset moto after.
    In the fast tier there is no stack: the environment points nowhere."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    if FAST:
        env = {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "fast", "AWS_SECRET_ACCESS_KEY": "fast"}
        for name, value in {**env, "AWS_ENDPOINT_URL": NOWHERE}.items():
            monkeypatch.setenv(name, value)
        yield
        return
    stack: LocalStack = request.getfixturevalue("stack")
    for name, value in stack.env(DEFAULT_EMULATOR).items():
        monkeypatch.setenv(name, value)
    yield
    urllib.request.urlopen(urllib.request.Request(f"{stack.dynamodb.url}/moto-api/reset", method="POST"), timeout=10)


@pytest.fixture(params=[DEFAULT_EMULATOR])
def emulator(request: pytest.FixtureRequest, stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Kinesis emulator a test runs on; parametrize with ``indirect=True`` to run on both."""
    name: str = request.param
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", stack.kinesis[name].url)
    return name


@pytest.fixture
def kinesis(emulator: str):  # type: ignore[no-untyped-def]
    return aws.kinesis_client()


@pytest.fixture
def dynamodb():  # type: ignore[no-untyped-def]
    return aws.dynamodb_client()


@pytest.fixture
def streams(kinesis, request: pytest.FixtureRequest) -> Iterator[StreamFactory]:  # type: ignore[no-untyped-def]
    factory = StreamFactory(kinesis, prefix=request.node.name)
    yield factory
    factory.delete_all()


#: Files whose tests take the longest (whole runs as processes, benchmarks, Airflow): they go
#: first, so that the quick tests fill the workers' gaps and no long test starts last.
SLOW_FIRST = (
    "test_benchmarks.py",
    "scenarios/test_crash_routed_changes.py",
    "scenarios/test_crash.py",
    "scenarios/test_crash_routed.py",
    "dags/test_kinesis_catchup_on_a_cluster.py",
    "maintenance/test_crash.py",
    "scenarios/test_crash_changes.py",
    "maintenance/test_a_day_of_runs.py",  # 5 x 12 runs of 16 shards
    # Whole runs whose read is a job run: after the first minutes, by when the environment archive
    # they need is built (_build_archive_early).
    "scenarios/test_emr_serverless.py",
    "dags/test_kinesis_catchup_on_emr_serverless.py",
    "scenarios/test_crash_decoded.py",
    "dags/test_kinesis_catchup.py",
    "scenarios/test_spark_connect.py",
    "scenarios/test_zombie.py",
    "scenarios/test_group_of_twelve.py",
    "scenarios/test_group_run.py",
    "cli/test_run.py",
    "dags/test_kinesis_streams.py",
    "scenarios/test_run_formats.py",
    "dags/test_kinesis_backfill.py",
    "cli/test_submit.py",
    "dagster/test_runs.py",
    "dagster/test_dagster_dev.py",
    "maintenance/test_with_catch_up.py",
    "scenarios/test_changes_together.py",
    "dags/test_kinesis_changes.py",
)


#: What each compatibility environment runs (``--contract NAME``, tools/compat.sh): the tests
#: marked ``contract(NAME, why=...)``, where a version of what it varies could behave otherwise.
CONTRACTS = {
    "spark": "the read step and whole runs on this PySpark",
    "connect": "Spark Connect (4.x only)",
    "airflow": "the DAGs parsed and run with dag.test(), the UI plugin, on this Airflow",
    "dagster": "the Dagster definitions loaded and materialized on this Dagster",
    "tables": "each format's publish, read-back, merge and maintenance on these table libraries",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--contract",
        action="append",
        default=[],
        choices=sorted(CONTRACTS),
        help="run only the tests of this contract set (a compatibility environment's); may repeat",
    )


def kind_of(item: pytest.Item) -> str:
    """How a test runs, for the cost report (devkit.suite_cost): an isolated process of its own
    (a kill -9, a signal, a frozen run, a fresh environment, a cluster, a benchmark), a whole run
    in the worker, a test of the endpoints, or pure."""
    isolated = item.get_closest_marker("isolated")
    if isolated is not None:
        return f"isolated: {isolated.args[0]}" if isolated.args else "isolated"
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & {"spark", "airflow_home", "emr_serverless"}:
        return "whole run"
    return "endpoints" if item.get_closest_marker("processes") else "pure"


class EmptyContract(pytest.Item):
    """Stands for every test of a run whose --contract set selects nothing: it fails, saying so."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise pytest.UsageError(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return self.message

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, "contract sets"


def contract_sets(item: pytest.Item) -> set[str]:
    names: set[str] = set()
    for marker in item.iter_markers("contract"):
        if not marker.kwargs.get("why"):
            raise pytest.UsageError(f"{item.nodeid}: contract({', '.join(marker.args)}) says no why=")
        unknown = set(marker.args) - set(CONTRACTS)
        if unknown or not marker.args:
            raise pytest.UsageError(f"{item.nodeid}: contract sets are {', '.join(CONTRACTS)}, not {unknown or 'none'}")
        names |= set(marker.args)
    return names


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set(config.getoption("contract"))
    if wanted:  # a contract's tests, and any test named by its id beside it
        named = {arg for arg in config.args if "::" in arg}
        kept = [item for item in items if contract_sets(item) & wanted or item.nodeid in named]
        empty = wanted - set().union(*(contract_sets(item) for item in kept))
        if empty:  # else "no tests ran" after an hour of CI
            message = f"the contract set(s) {', '.join(sorted(empty))} hold no test collected here"
            if not hasattr(config, "workerinput"):
                raise pytest.UsageError(message)
            # A pytest-xdist worker's UsageError crashes it and its message is lost: one failing test says it.
            config.hook.pytest_deselected(items=list(items))
            items[:] = [
                EmptyContract.from_parent(config.pluginmanager.getplugin("session"), name="contract", message=message)
            ]
            return
        kept_ids = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept_ids])
        items[:] = kept
    for item in items:  # `-m "not processes"`: the fast tier
        callspec = getattr(item, "callspec", None)
        on_s3 = callspec is not None and {"s3", "glue"} & set(callspec.id.split("-"))  # the outputs on moto
        if on_s3 or PROCESSES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("processes"):
            item.add_marker(pytest.mark.processes)
    if FAST:
        slow = [item for item in items if item.get_closest_marker("processes")]
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("processes")]
    rank = {name: index for index, name in enumerate(SLOW_FIRST)}
    here = Path(__file__).parent
    # Stable: the rest keep their order.
    items.sort(key=lambda item: rank.get(item.path.relative_to(here).as_posix(), len(SLOW_FIRST)))
    _build_archive_early(config, items)
    # Tests parametrized onto kinesis-local get its marker, so `-m "not kinesis_local"` skips them.
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("emulator") == "kinesis-local":
            item.add_marker(pytest.mark.kinesis_local)
        # the cost report's (devkit.suite_cost) columns, in the JUnit report
        item.user_properties += [("kind", kind_of(item)), ("path", item.path.relative_to(here.parent).as_posix())]


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    path = Path(__file__).resolve().parents[1] / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def spark(stack: LocalStack):  # type: ignore[no-untyped-def]
    """One local Spark session for the whole test session (tasks get endpoints in their specs)."""
    from kinesis_batch.spark.session import spark_session

    # Python workers inherit the JVM's environment, fixed when it starts: give it the stack's
    # region and credentials now (the per-test aws_env fixture comes later). Endpoints travel
    # in each task's spec.
    with pytest.MonkeyPatch.context() as environment:
        for name, value in STATIC_ENV.items():
            environment.setenv(name, value)
        engine = spark_session("local[2]", app_name="kinesis-batch-tests")
    yield engine
    engine.session.stop()


#: Where Airflow's own OpenLineage provider writes its events in the tests (AIRFLOW_HOME/...).
PROVIDER_EVENTS = "openlineage-provider.jsonl"


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory, stack: LocalStack) -> Path:
    """The session's Airflow: SQLite, the project's DAGs, the stack's connection, and the
    OpenLineage provider on for the DAGs a test enables, writing its events to
    :data:`PROVIDER_EVENTS` in the home."""
    stray = DAGS.parent / "kinesis_batch.egg-info"
    if stray.exists():  # tools/bootstrap.sh says why: Airflow would not load the provider's plugin
        pytest.fail(f"{stray} is an editable build's by-product: remove it (make test does)", pytrace=False)
    home = tmp_path_factory.mktemp("airflow-home")
    transport = {"type": "file", "log_file_path": str(home / PROVIDER_EVENTS), "append": True}
    settings = stack.airflow_env(home, DAGS) | {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        # its events from a thread of the task: the default forks, and this process holds a JVM
        "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
        # only for the DAGs a test enables (enable_lineage): its events cost a DAG run 1 to 2 s
        "AIRFLOW__OPENLINEAGE__SELECTIVE_ENABLE": "True",
    }
    os.environ.update(settings)  # before airflow is imported: it reads its settings once
    migrate_airflow_db(settings)
    return home
