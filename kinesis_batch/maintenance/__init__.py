"""Table maintenance: the small files of each partition compacted, old snapshots and versions
expired, orphan files removed, and the batch markers recovery needs kept through all of it
(kinesis_batch.output.markers). ``kinesis-batch maintain``, the maintenance DAGs and the
Dagster job all run :func:`maintain`.

- ``maintain.py``: the steps in order, and the report
- ``each.py``: every table one output stands for (a routed stream's template: each table it made)
- ``plan.py``: pure: which files are rewritten together, which are orphans, which snapshots go
- ``delta.py``, ``iceberg.py``, ``parquet.py``: each format's side of each step
- ``rewrite.py``: small Parquet files into files of the target size (Iceberg, parquet folders)
- ``exchange.py``: a parquet batch folder swapped for its compacted copy in one step
"""

from kinesis_batch.maintenance.each import maintain_each
from kinesis_batch.maintenance.maintain import maintain
from kinesis_batch.maintenance.report import MaintenanceReport
from kinesis_batch.maintenance.settings import MaintainSettings

__all__ = ["MaintainSettings", "MaintenanceReport", "maintain", "maintain_each"]
