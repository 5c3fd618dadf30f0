"""An error raised inside a Spark task comes back to the driver as the library's own error."""

from __future__ import annotations

import pytest

from kinesis_batch.errors import (
    InvalidStateError,
    KinesisBatchError,
    LeaseLostError,
    StreamNotFoundError,
    ThrottledError,
)
from kinesis_batch.spark.spec import raised_in_task, task_error

pytestmark = pytest.mark.contract("spark", why="a task's error as this PySpark hands it back")


def spark_failure(raised: Exception) -> Exception:
    """The shape of the text pyspark gives a failed task: a wrapper, the Python traceback, the
    task's own exception line (here ours), then the JVM's stack."""
    return RuntimeError(
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 1, in main\n'
        f"RuntimeError: {task_error(raised)}\n\n"
        "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(...)\n"
    )


CASES: dict[str, tuple[Exception, type[KinesisBatchError], str]] = {
    "throttling past the retries": (
        ThrottledError("GetRecords s/shardId-0: ProvisionedThroughputExceededException: Rate exceeded (gave up)"),
        ThrottledError,
        "GetRecords s/shardId-0: ProvisionedThroughputExceededException: Rate exceeded (gave up)",
    ),
    "a stream deleted mid-run": (
        StreamNotFoundError("GetShardIterator: stream 's' or shard shardId-0 does not exist"),
        StreamNotFoundError,
        "GetShardIterator: stream 's' or shard shardId-0 does not exist",
    ),
    "access denied": (
        InvalidStateError('GetRecords s: AccessDeniedException: not "allowed"\n(check the AWS credentials)'),
        InvalidStateError,
        'GetRecords s: AccessDeniedException: not "allowed"\n(check the AWS credentials)',
    ),
    "a lost lease": (LeaseLostError("lease x is not held"), LeaseLostError, "lease x is not held"),
    "not one of ours": (OSError(28, "No space left on device"), KinesisBatchError, "a read task failed: OSError"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_task_error_comes_back_as_the_same_class_and_message(case: str) -> None:
    raised, kind, message = CASES[case]
    error = raised_in_task(spark_failure(raised))
    assert type(error) is kind
    assert str(error).startswith(message)


def test_a_failure_without_a_task_error_is_left_to_the_caller() -> None:
    assert raised_in_task(RuntimeError("Job 3 cancelled part of cancelled job group kinesis-batch-x")) is None
    assert raised_in_task(RuntimeError("kinesis-batch-task-error:{not json")) is None
