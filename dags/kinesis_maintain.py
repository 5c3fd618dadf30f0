"""Daily maintenance of the configured output (``[kinesis_batch] output``, as kinesis_catchup's):
compact its small files into files of ``target_file_mb``, expire versions and snapshots older
than ``retain_hours``, remove orphan files, then ``check_files`` warns when the recent
partitions' files are small. It runs beside the catch-up runs: each side's commits retry the
other's. Scheduled once ``[kinesis_batch] stream`` names the stream the output is for; a
streams file makes one such DAG per stream (``kinesis_streams.py``).
"""

from __future__ import annotations

from kinesis_batch import defaults
from kinesis_batch.airflow.maintain import maintain_dag, maintain_params
from kinesis_batch.airflow.outputs import configured_output, configured_stream

maintain_dag(
    "kinesis_maintain",
    maintain_params(output=configured_output()),
    schedule=defaults.MAINTAIN_SCHEDULE if configured_stream() else None,
    doc_md=__doc__,
)
