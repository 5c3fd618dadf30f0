"""``kinesis-batch iam-policy``: the least-privilege IAM policy documents of a stream's runs (its
flags, as ``run`` takes them) or of every stream of a streams file (``--group G``: of that group),
one per principal (kinesis_batch.access), as JSON: every principal's by name, or ``--for P``'s
document alone. The consumer's account and region are ``--account`` and ``--region``, else the
environment's (STS answers the account). An Iceberg output's catalog is read from pyiceberg's
configuration, as a run reads it: a Glue catalog's tables and the warehouse's files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kinesis_batch.access.arns import Where
from kinesis_batch.access.needs import KMS, Catalog, Need, needs
from kinesis_batch.access.policy import documents
from kinesis_batch.cli.args import stream_settings
from kinesis_batch.config import RunConfig
from kinesis_batch.errors import IllegalArgumentError
from kinesis_batch.output.catalogs import catalog_config
from kinesis_batch.output.formats import format_of
from kinesis_batch.settings import StreamSettings
from kinesis_batch.spark.place import LOCAL, ReadPlace
from kinesis_batch.streams_file import ENTRY_FIELDS, StreamsFile, entry_settings


def iam_policy_command(args: argparse.Namespace) -> int:
    every = _streams(args)
    where = _where(args)
    if args.kms_key and len(every) != 1:
        raise IllegalArgumentError("--kms-key: one stream's key, with --stream")
    found: list[Need] = []
    for settings in every:
        found += needs(settings, where, catalog=_catalog(settings), kms_key=args.kms_key, backfills=args.backfills)
    docs = documents(found, reads_here=any(_reads_here(settings) for settings in every))
    if args.principal is None:
        print(json.dumps(docs, indent=2))
        return 0
    if args.principal not in docs:
        raise IllegalArgumentError(f"--for {args.principal}: {_none(args.principal)}")
    print(json.dumps(docs[args.principal], indent=2))
    return 0


def _streams(args: argparse.Namespace) -> list[StreamSettings]:
    if not args.streams_file:
        if args.group:
            raise IllegalArgumentError("--group: a group of --streams-file")
        return [stream_settings(args)]
    if args.stream:
        raise IllegalArgumentError("--stream and --streams-file: one or the other")
    streams = StreamsFile.read(Path(args.streams_file))
    only = streams.group(args.group).streams if args.group else None
    made, broken = streams.entries(entry_settings, ENTRY_FIELDS, key=_stream, only=only)
    if broken:
        raise IllegalArgumentError(broken[0].describe(streams.path))
    return list(made)


def _stream(settings: StreamSettings) -> str:
    return settings.stream


def _where(args: argparse.Namespace) -> Where:
    from kinesis_batch.aws import aws_call, new_session

    session = new_session()
    region = args.region or session.region_name
    if not region:
        raise IllegalArgumentError("--region: the consumer's region (no AWS_REGION or profile region is set)")
    account = args.account
    if not account:
        sts = session.client("sts", region_name=region)
        account = str(aws_call("GetCallerIdentity", "", sts.get_caller_identity)["Account"])
    partition = "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
    return Where(account, region, partition)


def _catalog(settings: StreamSettings) -> Catalog:
    """An Iceberg output's catalog as pyiceberg's configuration says (the embedded one: local)."""
    if not format_of(settings.format).catalog:
        return Catalog()
    configured = catalog_config(settings.catalog)
    return Catalog(str(configured.get("type") or ""), str(configured.get("warehouse") or ""))


def _reads_here(settings: StreamSettings) -> bool:
    """The read runs in the worker's own process, as a run decides it (SPARK_REMOTE included):
    the worker is then the executors too."""
    return ReadPlace.of(RunConfig(settings)).where == LOCAL


def _none(principal: str) -> str:
    if principal == KMS:
        return "no --kms-key given (a stream encrypted with a customer-managed key: DescribeStreamSummary's KeyId)"
    return (
        "these settings need no such document (a reader is a role_arn's; a stream policy, another account's "
        "stream read without one)"
    )


__all__ = ["iam_policy_command"]
