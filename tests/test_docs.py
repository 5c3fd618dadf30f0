"""The docs stay true: every link of the README and docs/ resolves (files and headings), the
module map of docs/architecture.md is the tree, the library's example runs, and the README
stays a page a new user reads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kinesis_batch import LeaseStore
from tests.runs import REPO
from tests.streams import StreamFactory, put

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "benchmarks" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: The folders the module map draws whole, and the files it may leave out.
MAPPED = ("kinesis_batch", "dags", "spark_jobs", "tools/devkit")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_link_of_the_page_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (anchor and anchor not in anchors(linked)):
            broken.append(target)
    assert broken == [], f"{page.name}: links to nowhere: {broken}"


def module_map() -> set[str]:
    """The paths the ```tree block of docs/architecture.md names (folders end with /)."""
    text = (REPO / "docs" / "architecture.md").read_text()
    (block,) = re.findall(r"```tree\n(.*?)```", text, flags=re.DOTALL)
    paths, folders = set(), []
    for line in block.splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        del folders[depth:]
        path = "".join(folders) + name
        paths.add(path)
        if name.endswith("/"):
            folders.append(name)
    return paths


def test_the_module_map_of_the_architecture_page_is_the_tree() -> None:
    drawn = module_map()
    missing = sorted(path for path in drawn if not (REPO / path).exists())
    modules = {
        str(path.relative_to(REPO))
        for folder in MAPPED
        for path in (REPO / folder).rglob("*.py")
        if "__pycache__" not in path.parts and path.name != "__init__.py"
    }
    assert missing == [], f"the map names what is not there: {missing}"
    assert sorted(modules - drawn) == [], "modules the map leaves out"


def test_the_readme_is_a_page_a_new_user_reads() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) < 200
    assert "make demo" in lines[lines.index("```sh") + 1] and "make test" in lines[lines.index("```sh") + 2]


def test_the_librarys_example_of_a_consumer_of_ones_own_runs(
    kinesis: Any, dynamodb: Any, streams: StreamFactory
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "library.md").read_text(), flags=re.DOTALL)
    (example,) = [block for block in blocks if "ShardReader(" in block]
    streams.create(shards=1, name="clicks")  # the example's stream
    put(kinesis, "clicks", 25)

    exec(compile(example, "docs/library.md", "exec"), {})  # the page's own code, as a reader copies it

    (lease,) = LeaseStore(dynamodb, "clicks-consumer").list_leases()
    assert lease.lease_owner is None and lease.last_batch_id == "batch-1" and not lease.checkpoint.is_start


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of a page (indented in a list item or not), dedented."""
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", page.read_text(), flags=re.M | re.S)
    return [textwrap.dedent(code) for _, code in blocks]


@pytest.mark.isolated("a fresh environment")
def test_the_outputs_pages_python_read_paths_read_a_table_and_exit_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block read as a user's script: a process of its own, three times (the abort the page
    warns of came in about half the runs of ``to_pyarrow_table()``)."""
    from kinesis_batch.output import Output
    from tests.output.support import commit_record, output_args, stage

    blocks = python_blocks(REPO / "docs" / "outputs.md")
    assert len(blocks) == 2, blocks
    for block, format in zip(blocks, ("delta", "iceberg"), strict=True):
        args = dict(zip(*[iter(output_args(format, "local", tmp_path, monkeypatch))] * 2, strict=True))
        sink = Output(format, args["--output"], args.get("--catalog")).open(app="docs", stream="s")
        sink.prepare()
        record = commit_record("b1")
        assert sink.publish(record, stage(sink, record, rows=3))
        catalog = args.get("--catalog", "")
        given = f"uri = {sink.uri!r}\nname = {catalog!r}\n"
        script = given + block.replace('"analytics.clicks"', repr(args["--output"])) + "\nprint(rows.num_rows)\n"
        for _ in range(3):
            done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
            assert (done.returncode, done.stdout.strip()) == (0, "6"), f"{format}: {done.returncode} {done.stderr}"


def test_the_iam_policy_file_is_the_commands_output_for_the_documented_example() -> None:
    from tests.runs import cli

    page = (REPO / "docs" / "outputs.md").read_text()
    command = page.split("```\nkinesis-batch iam-policy ", 1)[1].split("\n```", 1)[0].replace("\\\n", " ")
    ran = cli("iam-policy", *command.split())
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == json.loads((REPO / "docs" / "iam-policy.json").read_text())


def test_the_policies_operations_shows_are_the_commands_output_for_the_commands_above_them() -> None:
    from tests.runs import cli

    page = (REPO / "docs" / "operations.md").read_text()
    shown = re.findall(r"```\n(kinesis-batch iam-policy [^`]*?)\n```\n\n```json\n(.*?)\n```", page, re.S)
    assert len(shown) == 2, "the stream policy and the reader's trust"
    for command, document in shown:
        ran = cli(*command.replace("\\\n", " ").split()[1:])
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == json.loads(document), command
