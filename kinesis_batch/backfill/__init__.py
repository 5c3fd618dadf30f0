"""Backfills: read a stream again from an older position into an output of their own, the same
for the command line, the backfill DAG and Dagster's backfill job.

A backfill that does not move the main checkpoints gets a lease table of its own
(``LEASE_TABLE-backfill-ID``), seeded with a start checkpoint per shard (:mod:`.starts`), so it
never conflicts with the scheduled runs and leaves the main checkpoints where they are. Its
plan (:mod:`.plan`) is pure; seeding (:mod:`.seed`) writes the backfill's own lease table.
"""
