"""A job run's name says whose it is, and is read back the same (the next run finds orphans by it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.serverless.naming import BATCH, STREAM, TABLE, WORKER, JobName, tags

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
