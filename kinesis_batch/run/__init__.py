"""One catch-up run, a module per step, in the order a run takes them:

1. ``survey``   list the shards, build the lineage, read the leases; plan (read-only)
2. ``settle``   recover the batches crashed runs left pending (roll forward, or discard)
3. ``lease``    take the planned shards' leases, mark them with the batch, write the plan
4. ``read``     one Spark job reads every held shard into the batch's staging
5. ``publish``  the batch becomes visible in the output's one atomic step
6. ``commit``   the checkpoints move, fenced, parents first
7. ``release``  the teardown, also after a failure: discard what was not published, let go

``retention`` is the read's policy for trimmed and ageing data; ``context`` is what every
step works with; ``report`` is what a run did. The steps tell observers (kinesis_batch.events)
where the run is.
:class:`CatchUpRun` (``catch_up``) composes the steps.
"""

from kinesis_batch.run.catch_up import CatchUpRun
from kinesis_batch.run.context import Progress, RunContext, new_run_id
from kinesis_batch.run.read import Read
from kinesis_batch.run.report import RunReport
from kinesis_batch.run.survey import plan_now

__all__ = ["CatchUpRun", "Progress", "Read", "RunContext", "RunReport", "new_run_id", "plan_now"]
