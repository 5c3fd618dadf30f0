"""A job run's name says whose it is, and is read back the same (the next run finds orphans by it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.serverless.naming import BATCH, GROUP, STREAM, TABLE, WORKER, GroupJobName, JobName, group_tags, tags

TABLES = st.text(st.sampled_from("abcXYZ019_.-"), min_size=3, max_size=255)
BATCHES = st.text(st.sampled_from("abcT0123456789-_:."), min_size=1, max_size=60).filter(
    lambda b: not b.startswith((".", "_"))
)
ATTEMPTS = st.text(st.sampled_from("0123456789abcdef"), min_size=1, max_size=12)


@given(TABLES, BATCHES, ATTEMPTS)
def test_a_name_is_read_back_as_it_was_made(table: str, batch: str, attempt: str) -> None:
    name = JobName(table, batch, attempt)
    assert JobName.parse(str(name)) == name


def test_other_job_runs_are_not_read_steps() -> None:
    for other in ("", "nightly-etl", "kinesis-batch/only-two", "kinesis-batch/t/b/NOT-HEX", "x/kinesis-batch/t/b/1"):
        assert JobName.parse(other) is None


def test_the_tags_say_the_stream_table_batch_and_worker_in_tag_values_aws_takes() -> None:
    made = tags(JobName("kinesis-batch-clicks", "run-1", "ab"), stream="clicks", worker_id="host-1-pid#2" + "x" * 300)
    assert made[STREAM] == "clicks" and made[TABLE] == "kinesis-batch-clicks" and made[BATCH] == "run-1"
    assert made[WORKER].startswith("host-1-pid_2") and len(made[WORKER]) == 256


@given(st.text(min_size=1, max_size=300))
def test_a_groups_job_run_is_named_as_one_and_never_taken_for_a_streams(group: str) -> None:
    name = GroupJobName.new(group)
    assert GroupJobName.parse(str(name)) == name and JobName.parse(str(name)) is None
    assert len(str(name)) <= 256 and len(name.client_token) <= 64  # EMR Serverless' limits
    assert name != GroupJobName.new(group)  # each job run of the group a name of its own


def test_a_streams_job_run_is_not_a_groups() -> None:
    for other in ("kinesis-batch/t/run-1/0a", "kinesis-batch-group/g", "kinesis-batch-group/g/NOT-HEX", "nightly"):
        assert GroupJobName.parse(other) is None


def test_a_groups_tags_say_the_group_and_the_worker() -> None:
    assert group_tags("hourly jobs", worker_id="host-1") == {GROUP: "hourly jobs", WORKER: "host-1"}
