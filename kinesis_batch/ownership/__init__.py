"""Whose lease table this is: checked before anything is written (a run, a backfill, a reset, the
KCL hand-over) and before anything is shown (plan, status, history, the Airflow page).

A table pair kinesis-batch made carries its mark (:mod:`kinesis_batch.ownership.table_mark`). :func:`check`
reads it and refuses, in one line each (exit 2), having written nothing:

- a table that holds leases but is not ours, saying what it looks like (a KCL application's, or
  unknown: kinesis_batch.ownership.foreign);
- a table of another stream, naming both;
- a stream created again after its table was made, giving both creation times and the way out
  (``kinesis-batch reset``);
- a table of a newer format than this install understands.

A table without a mark but with leases was made by an earlier kinesis-batch, or is someone
else's. It is adopted once, when every item is ours and every stored sequence number belongs to
this stream: :func:`mark` then writes the mark and says so in one line. A table that does not
exist yet, or holds nothing, is new: :func:`mark` marks it once the run has made it.
"""

from kinesis_batch.ownership.claim import Claim, check, check_sequences, mark, remark
from kinesis_batch.ownership.table_mark import FORMAT_VERSION, MARK_KEY, TableMark, read_mark, write_mark

__all__ = [
    "FORMAT_VERSION",
    "MARK_KEY",
    "Claim",
    "TableMark",
    "check",
    "check_sequences",
    "mark",
    "read_mark",
    "remark",
    "write_mark",
]
