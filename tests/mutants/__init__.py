"""Deliberate faults the suite must catch: each is one edit of the product's code (a text replaced
once in one file) that breaks a promise, with the tests that prove that promise. ``make
test-mutants`` (``python -m tests.mutants``) applies each in turn to a checkout, runs its tests,
and restores the file: every mutant must turn them red. Run against the suite before and after a
change to the suite, it shows that nothing a cut test proved went unproven.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """``old`` (found exactly once in ``path``) replaced by ``new`` breaks what ``promise`` says;
    ``tests`` (paths and node ids under the checkout) must fail."""

    name: str
    promise: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTANTS = (
    Mutant(
        "publish-after-commit",
        "the checkpoint follows the output: published first, committed after",
        "kinesis_batch/run/catch_up.py",
        "                published = self.publish()  # under way: a stop now waits for it, and its commit\n"
        "                self.commit()\n",
        "                self.commit()\n                published = self.publish()\n",
        ("tests/run/test_catch_up.py",),
    ),
    Mutant(
        "checkpoint-of-a-discarded-batch",
        "a discarded batch's records are read again: its checkpoint stays",
        "kinesis_batch/checkpoints/store.py",
        '"SET leaseCounter = leaseCounter + :one "\n            "REMOVE pendingCheckpoint,',
        '"SET leaseCounter = leaseCounter + :one, checkpoint = pendingCheckpoint "\n'
        '            "REMOVE pendingCheckpoint,',
        ("tests/checkpoints", "tests/run/test_settle.py"),
    ),
    Mutant(
        "renewal-without-fencing",
        "a lease is renewed only by its holder, at the counter it holds",
        "kinesis_batch/leases/store.py",
        '"SET leaseCounter = leaseCounter + :one, leaseExpiresAt = :expires",\n'
        '            {":expires": {"N": str(expires_at_ms)}},\n        )',
        '"SET leaseCounter = leaseCounter + :one, leaseExpiresAt = :expires",\n'
        '            {":expires": {"N": str(expires_at_ms)}},\n            fence_counter=False,\n'
        "        ) or self.take_lease(self.get_lease(lease.lease_key), str(lease.lease_owner), expires_at_ms)",
        ("tests/leases",),
    ),
    Mutant(
        "a-page-cut-drops-a-record",
        "every record of a page lands, however the pages are cut into row groups",
        "kinesis_batch/spark/rows.py",
        "chunk.cut(min(room, len(chunk)), len(chunk))",
        "chunk.cut(min(room, len(chunk)) + 1, len(chunk))",
        ("tests/spark/test_rows.py",),
    ),
    Mutant(
        "a-child-before-its-parent",
        "a child shard is read only after each parent reached its end",
        "kinesis_batch/planning.py",
        "blocking = tuple(p for p in lineage.parents[shard_id] if p not in finished_set and p not in waves)",
        "blocking: tuple[str, ...] = ()",
        ("tests/test_planning.py",),
    ),
    Mutant(
        "a-tombstone-ignored",
        "a key deleted stays deleted when an older change of it arrives later",
        "kinesis_batch/output/changes.py",
        "found = Tombstones(table.bookkeeping()).read(key, keys)",
        "found = None",
        ("tests/output/test_tombstones.py", "tests/output/test_changes.py"),
    ),
    Mutant(
        "a-dead-letter-counted-as-a-row",
        "a record lands once: as rows or as a dead letter, counted as what it became",
        "kinesis_batch/landing.py",
        'rows=int(counts.get("rows", 0)),',
        'rows=int(counts.get("rows", 0)) + int(counts.get("dead_letters", 0)),',
        ("tests/test_landing.py", "tests/decoding/test_runs.py"),
    ),
    Mutant(
        "a-route-into-another-consumers-table",
        "a route never writes into a table this consumer did not make",
        "kinesis_batch/output/composite.py",
        "if table.exists() and not _adoptable(table):",
        "if table.exists() and not _adoptable(table) and False:",
        ("tests/output/test_composite.py", "tests/run/test_route.py"),
    ),
    Mutant(
        "a-group-streams-failure-fails-its-neighbours",
        "a stream of a group fails alone",
        "kinesis_batch/run/group.py",
        "        except Exception as exc:\n            return StreamOutcome(stream, error=exc)",
        "        except Exception:\n            raise",
        ("tests/run/test_group.py", "tests/cli/test_group.py"),
    ),
    Mutant(
        "a-job-runs-bill-unrecorded",
        "an EMR Serverless job run's bill is kept in the history, whatever its outcome",
        "kinesis_batch/run/job_run.py",
        "    record_bill(context.checkpoints.history, ended)",
        "    del ended  # never kept",
        (
            "tests/scenarios/test_emr_serverless.py::"
            "test_an_hour_with_nothing_new_starts_no_job_run_and_every_billed_one_is_in_the_history",
        ),
    ),
    Mutant(
        "a-control-plane-call-without-retry",
        "a throttled or dropped control-plane call is tried again",
        "kinesis_batch/aws.py",
        "            if attempt >= backoff.attempts:\n                raise",
        "            if attempt >= 1:\n                raise",
        ("tests/test_aws.py", "tests/leases/test_dynamodb.py"),
    ),
)
