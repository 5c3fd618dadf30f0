"""``package``: the executors' environment in one archive (kinesis_batch.environment), and
the Spark settings that make a cluster's executors use it."""

from __future__ import annotations

import argparse
import json
import sys


def package_command(args: argparse.Namespace) -> int:
    from kinesis_batch.aws import s3_settings
    from kinesis_batch.environment import build
    from kinesis_batch.storage.place import Place, is_s3

    output = Place(args.output, s3_settings() if is_s3(args.output) else Place(args.output).s3)
    say = (lambda _: None) if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    package = build(args.python, args.arch, output, replace=args.replace, progress=say)
    if args.json:
        print(json.dumps({"archive": package.archive, "settings": dict(package.settings)}, indent=1))
        return 0
    print("Spark settings that give it to the executors (spark-submit --conf, a Spark connection's conf):")
    for key, value in package.settings:
        print(f"  {key}={value}")
    return 0
