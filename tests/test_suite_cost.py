"""The suite's cost report (tools/devkit/suite_cost.py): a JUnit report read back into a table by
kind and folder, and a command's own CPU and JVMs counted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from devkit.suite_cost import Case, Usage, cases_of, main, run, summary

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
  <testcase classname="tests.scenarios.test_crash" name="test_kill[parquet]" time="40.5">
    <properties><property name="kind" value="isolated: kill -9"/>
      <property name="path" value="tests/scenarios/test_crash.py"/></properties>
  </testcase>
  <testcase classname="tests.test_pairs" name="test_rows" time="0.25">
    <properties><property name="kind" value="pure"/><property name="path" value="tests/test_pairs.py"/></properties>
  </testcase>
  <testcase classname="tests.scenarios.test_run_formats" name="test_runs[delta-s3]" time="9.25"/>
</testsuite></testsuites>
"""


def test_a_junit_report_gives_each_case_its_kind_folder_and_seconds(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT)
    cases = cases_of(report)
    assert cases == [
        Case(
            "tests.scenarios.test_crash::test_kill[parquet]", "tests/scenarios/test_crash.py", "isolated: kill -9", 40.5
        ),
        Case("tests.test_pairs::test_rows", "tests/test_pairs.py", "pure", 0.25),
        # no properties (a report of another suite): the file from its class, the kind unknown
        Case(
            "tests.scenarios.test_run_formats::test_runs[delta-s3]",
            "tests/scenarios/test_run_formats.py",
            "unknown",
            9.25,
        ),
    ]
    assert {case.folder for case in cases} == {"tests/scenarios", "tests"}
    assert {case.kind for case in cases_of(report, "compat environment")} == {"compat environment"}


def test_the_summary_prints_usage_the_most_expensive_first_and_the_tables() -> None:
    cases = [Case("a::slow", "tests/a/test_x.py", "whole run", 30.0), Case("b::quick", "tests/test_y.py", "pure", 10.0)]
    text = summary("make test", cases, Usage(wall=20.0, cpu=30.0, machine_busy=1.6, jvms=3))
    lines = text.splitlines()
    assert lines[0] == "== cost of make test: 2 tests, 40.0 worker-seconds in tests"
    assert lines[1].startswith("wall 20.0 s, CPU 30.0 s of its processes (1.50 cores), machine 1.60 of")
    assert lines[1].endswith("3 JVMs started")
    assert lines[3].split() == ["30.0", "s", "whole", "run", "a::slow"]
    assert "| whole run | 1 | 30.0 | 75% |" in lines
    assert "| tests/a | 1 | 30.0 | 75% |" in lines
    assert "| tests | 1 | 10.0 | 25% |" in lines


@pytest.mark.processes
def test_a_command_is_measured_with_the_cpu_of_its_children_and_keeps_its_exit_status() -> None:
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}]); sys.exit(3)"
    code, usage = run([sys.executable, "-c", child])
    assert code == 3
    assert usage.cpu >= 0.3  # the grandchild's CPU is in it
    assert usage.wall >= 0.3
    assert usage.jvms == 0


def test_a_report_already_written_is_printed_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT)
    assert main(["--report", str(report), "--tier", "compat"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== cost of compat: 3 tests, 50.0 worker-seconds in tests")
    assert "| tests/scenarios | 2 | 49.8 | 100% |" in out
