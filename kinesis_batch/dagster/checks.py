"""The stream's asset checks, from the same status the command line and the Airflow page show:

- ``lag``: the oldest unread record of any unfinished shard is younger than the threshold;
- ``retention``: no shard's unread records are at ``critical`` or ``lost`` retention risk;
- ``output_agrees``: the output's last batch ends where the checkpoints are (else a crash came
  between the table commit and the checkpoint commit; the next run rolls the checkpoints forward);
- ``dead_letters`` (a decoding stream's): no more than ``dead_letter_threshold`` of the output's
  last batch's records are dead letters (ERROR: it names how many, the shards, the most common
  reason);
- ``files``: the recent partitions' files are not small on average (WARN, below
  ``small_file_mb``: the maintenance job would compact them), with the output's file count, mean
  size and last maintenance.

They run after each materialization (the catch-up job selects the asset and so its checks) and
on their own in the checks job. Before the first run there is nothing to check: each fails
(WARN) and says so.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from kinesis_batch.alerts import judge_dead_letters, judge_lag
from kinesis_batch.dagster.resources import AwsClients
from kinesis_batch.dagster.runs import Consumer, failing_for_good
from kinesis_batch.errors import LeaseTableNotFoundError
from kinesis_batch.status import stream_status

LAG = "lag"
RETENTION = "retention"
OUTPUT_AGREES = "output_agrees"
DEAD_LETTERS = "dead_letters"
FILES = "files"


def check_specs(settings: Consumer, asset: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    threshold = settings.settings.lag_threshold_seconds
    return [
        dg.AssetCheckSpec(LAG, asset=asset, description=f"the consumer is less than {threshold:g} s behind"),
        dg.AssetCheckSpec(RETENTION, asset=asset, description="no unread record is about to leave retention"),
        dg.AssetCheckSpec(OUTPUT_AGREES, asset=asset, description="the output's last batch matches the checkpoints"),
        dg.AssetCheckSpec(
            FILES,
            asset=asset,
            description=f"the recent partitions' files average {settings.small_file_mb:g} MiB or more",
        ),
        *(
            [dg.AssetCheckSpec(DEAD_LETTERS, asset=asset, description=_dead_letters_described(settings))]
            if settings.decoding.decoding
            else []
        ),
    ]


def _dead_letters_described(settings: Consumer) -> str:
    return f"no more than {settings.settings.dead_letter_threshold:.2%} of the last batch's records are dead letters"


def check_results(settings: Consumer, aws: AwsClients, asset: dg.AssetKey) -> list[dg.AssetCheckResult]:
    """Read-only: lists shards, reads the lease table, probes lag, looks up the output's last batch."""
    with failing_for_good():
        output = settings.sink(aws)
        try:
            status = stream_status(
                aws.kinesis(), aws.dynamodb(), settings.stream, settings.table, output=output,
                small_file_mb=settings.small_file_mb,
            )  # fmt: skip
        except LeaseTableNotFoundError as exc:
            names = [*_NAMES, *([DEAD_LETTERS] if settings.decoding.decoding else [])]
            return [_result(asset, name, False, dg.AssetCheckSeverity.WARN, reason=str(exc)) for name in names]
        letters = (
            judge_dead_letters(settings.stream, output.last_batch(), settings.settings.dead_letter_threshold)
            if settings.decoding.decoding
            else None
        )
    judged = judge_lag(status, settings.settings.lag_threshold_seconds)
    lagging = {behind.shard_id: behind.lag_seconds for behind in judged.lagging}
    at_risk = {behind.shard_id: behind.retention_risk for behind in judged.at_risk}
    last = status.output
    disagreeing = list(last.disagreeing_shards) if last else []
    files = last.files if last else None
    maintained = files.last_maintenance if files else None
    return [
        _result(
            asset,
            LAG,
            not lagging,
            dg.AssetCheckSeverity.WARN,
            max_lag_seconds=status.max_lag_seconds,
            threshold_seconds=settings.settings.lag_threshold_seconds,
            lagging_shards=lagging,
        ),
        _result(
            asset,
            RETENTION,
            not at_risk,
            dg.AssetCheckSeverity.ERROR,
            worst_retention_risk=status.worst_retention_risk.value,
            retention_hours=status.retention_hours,
            shards_at_risk=at_risk,
        ),
        _result(
            asset,
            OUTPUT_AGREES,
            not disagreeing,
            dg.AssetCheckSeverity.WARN,
            last_batch=last.last_batch if last else None,
            disagreeing_shards=disagreeing,
        ),
        _result(
            asset,
            FILES,
            not (files and files.small_files),
            dg.AssetCheckSeverity.WARN,
            files=files.stats.files if files else None,
            mean_file_bytes=files.stats.mean_file_bytes if files else None,
            recent_mean_file_bytes=files.stats.recent_mean_file_bytes if files else None,
            last_maintained=maintained.finished_at.isoformat() if maintained else None,
            message=files.small_files if files else None,
        ),
        *(
            [
                _result(
                    asset,
                    DEAD_LETTERS,
                    letters.ok,
                    dg.AssetCheckSeverity.ERROR,
                    dead_letters=letters.dead_letters,
                    records=letters.records,
                    threshold=letters.threshold,
                    shards=dict(letters.shards),
                    most_common_reason=letters.reason,
                    message=letters.message(),
                )
            ]
            if letters is not None
            else []
        ),
    ]


_NAMES = (LAG, RETENTION, OUTPUT_AGREES, FILES)


def _result(
    asset: dg.AssetKey, name: str, passed: bool, severity: dg.AssetCheckSeverity, **metadata: Any
) -> dg.AssetCheckResult:
    values = {
        key: dg.MetadataValue.json(value) if isinstance(value, (dict, list)) else value
        for key, value in metadata.items()
    }
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=name,
        passed=passed,
        severity=severity,
        metadata={k: v for k, v in values.items() if v is not None},
    )
