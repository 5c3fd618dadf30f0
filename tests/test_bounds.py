"""Every bound a setting has is refused by every adapter that offers the setting, in the same
words, and a value just inside it is taken by all of them: a table of cases over the command
line, a streams file, Dagster's definitions, the Airflow forms (their JSON Schema) and the
Airflow task that builds a run from the form's values. The bounds below are this test's own
oracle, written apart from the code's (kinesis_batch.bounds).

Airflow reads its settings once, when it is first imported: its adapters are asked only in the
tests that have ``airflow_home`` (tests/conftest.py) set them up first."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kinesis_batch.bounds import Bound
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.maintenance.settings import MAINTAIN_OPTIONS
from kinesis_batch.options import bound_of
from kinesis_batch.settings import AIRFLOW, CLI, DAGSTER, OPTIONS, flag


@dataclass(frozen=True)
class Range:
    """A setting's bounds as a user reads them in the docs: ``low``..``high``; ``above``: more
    than ``low``; ``whole``: a whole number."""

    low: float
    high: float | None = None
    above: bool = False
    whole: bool = False

    def said(self, value: float) -> str:
        if self.high is not None:
            return f"{value:g} is not in {self.low:g}..{self.high:g}"
        return f"{value:g} is not more than {self.low:g}" if self.above else f"{value:g} is not {self.low:g} or more"

    def cases(self) -> Iterator[tuple[float, bool]]:
        """(value, taken): each edge, and just past it."""
        step = 1 if self.whole else 0.5
        yield self.low, not self.above
        yield self.low - step, False
        yield self.low + step, True
        if self.high is not None:
            yield self.high, True
            yield self.high + step, False


#: The bounds the docs state (docs/cli.md, docs/operations.md).
RANGES = {
    "lease_seconds": Range(10, 86_400),
    "shards_per_task": Range(0, whole=True),
    "target_file_mb": Range(1, 4096, whole=True),
    "tombstone_hours": Range(0, above=True),
    "max_new_tables": Range(0, whole=True),
    "lag_threshold_seconds": Range(0, above=True),
    "dead_letter_threshold": Range(0, 1),
    "retain_hours": Range(0, 87_600, whole=True),
}


def test_every_bounded_setting_is_in_the_table() -> None:
    bounded = {each.name for each in (*OPTIONS, *MAINTAIN_OPTIONS) if bound_of(each) != Bound()}
    assert bounded == set(RANGES)


# -- the adapters: each returns the line it refuses a value with, or None when it takes it ----------

BASE = {"stream": "clicks", "output": "/tmp/kinesis-batch-bounds/clicks"}
MAINTAINED = ("target_file_mb", "retain_hours", "tombstone_hours")


def _said(call: Callable[[], Any]) -> str | None:
    try:
        call()
    except IllegalArgumentError as exc:
        return str(exc)
    return None


def command_line(name: str, value: float) -> str | None:
    """``kinesis-batch run`` (a stream setting) or ``maintain`` (a maintenance one): refused with
    exit 2 and its line on stderr; taken: the settings the flags make."""
    from kinesis_batch import cli
    from kinesis_batch.cli.args import build_parser, stream_settings
    from kinesis_batch.maintenance.settings import MaintainSettings

    stream = name in {each.name for each in OPTIONS if CLI in each.metadata["where"]}
    given = [flag(next(each for each in (*OPTIONS, *MAINTAIN_OPTIONS) if each.name == name)), f"{value:g}"]
    argv = ["run", "--stream", BASE["stream"], "--output", BASE["output"], *given] if stream else None
    argv = argv or ["maintain", "--output", BASE["output"], *given]
    args = build_parser().parse_args(argv)
    if stream:
        refused = _said(lambda: stream_settings(args))
    else:
        refused = _said(lambda: MaintainSettings(**{each: getattr(args, each) for each in MAINTAINED}))
    if refused is None:
        return None
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(argv) == 2
    line = err.getvalue().strip()
    assert line.endswith(refused), line
    return refused


def streams_file(name: str, value: float) -> str | None:
    from kinesis_batch.airflow.streams import StreamEntry

    return _said(lambda: StreamEntry.from_mapping(**BASE, **{name: value}))


def dagster(name: str, value: float) -> str | None:
    from kinesis_batch.dagster import build_stream_defs

    return _said(lambda: build_stream_defs(BASE["stream"], output=BASE["output"], **{name: value}))


def airflow_form(name: str, value: float) -> str | None:
    """The catch-up form (the maintenance form for ``retain_hours``); its words are Airflow's."""
    from airflow.sdk.exceptions import ParamValidationError

    from kinesis_batch.airflow.dags import catch_up_params
    from kinesis_batch.airflow.maintain import maintain_params
    from kinesis_batch.output import Output

    if name in {each.name for each in OPTIONS}:
        form = catch_up_params(BASE)
    else:
        form = maintain_params(output=Output("parquet", BASE["output"]))
    try:
        form[name].resolve(value)
    except ParamValidationError as exc:
        return str(exc)
    return None


def airflow_task(name: str, value: float) -> str | None:
    """A catch-up DAG run's configuration from its params (the form's checks passed)."""
    from airflow.sdk.exceptions import AirflowFailException

    from kinesis_batch.airflow.tasks import _config

    try:
        _config({**BASE, name: value}, "kinesis_catchup", "manual__2026-01-01T00:00:00+00:00")
    except AirflowFailException as exc:
        return str(exc)
    return None


def offered_by(name: str, *, airflow: bool) -> dict[str, Callable[[str, float], str | None]]:
    """The adapters that offer the setting: Airflow's (``airflow``), or the others."""
    option = next((each for each in OPTIONS if each.name == name), None)
    where = option.metadata["where"] if option is not None else frozenset({CLI, AIRFLOW, DAGSTER})
    adapters: dict[str, Callable[[str, float], str | None]] = {}
    if airflow:
        if AIRFLOW in where:
            adapters["airflow form"] = airflow_form
            if option is not None:
                adapters["airflow task"] = airflow_task
        return adapters
    if CLI in where:
        adapters["command line"] = command_line
    if AIRFLOW in where:
        adapters["streams file"] = streams_file
    if DAGSTER in where:
        adapters["dagster"] = dagster
    return adapters


CASES = [
    pytest.param(name, value, taken, id=f"{name}={value:g}")
    for name, bounds in RANGES.items()
    for value, taken in bounds.cases()
]


@pytest.mark.parametrize(("name", "value", "taken"), CASES)
def test_a_bound_is_refused_by_every_adapter_in_the_same_words(name: str, value: float, taken: bool) -> None:
    assert len(offered_by(name, airflow=False)) >= 2
    refused_alike(name, value, taken, airflow=False)


@pytest.mark.usefixtures("airflow_home")
@pytest.mark.parametrize(("name", "value", "taken"), CASES)
def test_a_bound_is_refused_by_the_airflow_form_and_task_as_by_the_others(name: str, value: float, taken: bool) -> None:
    assert offered_by(name, airflow=True)
    refused_alike(name, value, taken, airflow=True)


def refused_alike(name: str, value: float, taken: bool, *, airflow: bool) -> None:
    bounds = RANGES[name]
    value = int(value) if bounds.whole else value
    adapters = offered_by(name, airflow=airflow)
    said = {adapter: refuse(name, value) for adapter, refuse in adapters.items()}
    if taken:
        assert said == dict.fromkeys(adapters), said
        return
    assert all(said.values()), said
    words = bounds.said(value)
    for adapter, line in said.items():
        if adapter == "airflow form":  # Airflow says it before any task runs, in JSON Schema's words
            first = str(line).splitlines()[0]
            edge = bounds.high if bounds.high is not None and value > bounds.high else bounds.low
            assert first.startswith(f"{value:g} is ") and first.endswith(f"imum of {edge:g}"), first
            continue
        named = flag(next(each for each in (*OPTIONS, *MAINTAIN_OPTIONS) if each.name == name))
        expected = f"{named}: {words}" if adapter == "command line" else f"{name}: {words}"
        assert str(line).endswith(expected), (adapter, line)


DISAGREED = [
    ("tombstone_hours", 0.5, True),  # the form once refused what the command line took
    ("lag_threshold_seconds", 0, False),  # the form once took what the run refused
]


@pytest.mark.parametrize(("name", "value", "taken"), DISAGREED)
def test_the_bounds_the_adapters_once_disagreed_on(name: str, value: float, taken: bool) -> None:
    said = {adapter: refuse(name, value) for adapter, refuse in offered_by(name, airflow=False).items()}
    assert said and all((line is None) == taken for line in said.values()), said


@pytest.mark.usefixtures("airflow_home")
@pytest.mark.parametrize(("name", "value", "taken"), DISAGREED)
def test_the_bounds_the_airflow_form_once_disagreed_on(name: str, value: float, taken: bool) -> None:
    said = {adapter: refuse(name, value) for adapter, refuse in offered_by(name, airflow=True).items()}
    assert said and all((line is None) == taken for line in said.values()), said
