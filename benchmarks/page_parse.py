"""One GetRecords page, parsed each way, on one core: where a raw read's CPU goes.

A page of 10,000 records of 1 KiB (``--records``, ``--size``), as Kinesis writes it in JSON
(``Data`` base64, arrival times as epoch seconds) and in CBOR as the Java SDK asks for it
(``Data`` a byte string, arrival times epoch milliseconds): each measured as CPU per page and
CPU seconds per GiB of record data, best of ``--repeat``:

- botocore's JSON parser as it comes (dateutil for each arrival time), and as the client ran it
  before (its timestamp parser already ours: epoch numbers straight to datetimes);
- the fast path's typed msgspec decoder (kinesis_batch.shards.page.decode_json);
- cbor2 on the CBOR page, its records then taken as columns (what a CBOR path would cost);
- then what follows the parse, both ways: the records as Record objects and their columns built
  record by record (before), and the columns unpacked and built at once (the fast path's
  kinesis_batch.shards.chunk and kinesis_batch.spark.rows);
- and the row group written as the tasks write it (pyarrow's ParquetWriter, its defaults: snappy).
"""

from __future__ import annotations

import argparse
import base64
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

GIB = 1024**3


def json_page(records: int, size: int) -> bytes:
    data = base64.b64encode(bytes(range(256)) * (size // 256) + b"x" * (size % 256)).decode()
    items = [
        {
            "SequenceNumber": str(49_680_581_119_842_645_569_947_595_767_498_122_488_637_138_254_010_777_602 + n),
            "ApproximateArrivalTimestamp": 1_795_690_590.088 + n / 1000,
            "Data": data,
            "PartitionKey": f"key-{n % 1000}",
        }
        for n in range(records)
    ]
    return json.dumps({"Records": items, "NextShardIterator": "A" * 200, "MillisBehindLatest": 0}).encode()


def cbor_page(page: bytes) -> bytes:
    import cbor2

    parsed = json.loads(page)
    for item in parsed["Records"]:
        item["Data"] = base64.b64decode(item["Data"])
        item["ApproximateArrivalTimestamp"] = round(item["ApproximateArrivalTimestamp"] * 1000)
    return bytes(cbor2.dumps(parsed))


def best(call: Callable[[], Any], repeat: int) -> float:
    """The least CPU seconds of ``repeat`` calls (process time: this thread's work only)."""
    times = []
    for _ in range(repeat):
        began = time.process_time()
        call()
        times.append(time.process_time() - began)
    return min(times)


def botocore_parse(page: bytes, *, as_it_comes: bool = False) -> Callable[[], Any]:
    from botocore.parsers import ResponseParserFactory

    from kinesis_batch.aws import kinesis_client

    client = kinesis_client(endpoint_url="http://127.0.0.1:9")
    factory = ResponseParserFactory() if as_it_comes else client._endpoint._response_parser_factory  # type: ignore[attr-defined]
    parser = factory.create_parser("json")
    shape = client.meta.service_model.operation_model("GetRecords").output_shape
    response = {"status_code": 200, "headers": {}, "body": page}
    return lambda: parser.parse(response, shape)


def cbor_columns(page: bytes) -> Callable[[], Any]:
    import cbor2

    def parse() -> Any:
        records = cbor2.loads(page)["Records"]
        return (
            [r["SequenceNumber"] for r in records],
            [r["ApproximateArrivalTimestamp"] for r in records],
            [r["PartitionKey"] for r in records],
            [r["Data"] for r in records],
        )

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=1024, help="bytes of data a record")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1,000 records, 2 repeats (CI)")
    args = parser.parse_args(argv)
    records, repeat = (1_000, 2) if args.quick else (args.records, args.repeat)

    from kinesis_batch.columns import record_columns
    from kinesis_batch.shards.chunk import unpack
    from kinesis_batch.shards.page import Page, decode_json
    from kinesis_batch.spark.rows import row_groups

    page = json_page(records, args.size)
    gib = records * args.size / GIB
    parsed = botocore_parse(page)()
    fast = Page.from_botocore(decode_json(page))
    if Page.from_botocore(parsed) != fast:
        raise SystemExit("botocore's parse and the fast one differ")

    def per_record() -> Any:  # before: a Record per user record, columns built from them
        chunk = unpack("shardId-0", Page.from_botocore(parsed).records)
        rows = list(chunk.records())
        return pa.RecordBatch.from_pydict(record_columns(rows, 0, data=True))

    def at_once() -> Any:
        chunk = unpack("shardId-0", fast.records)
        return list(row_groups([chunk], 0, None, threading.Event(), 1 << 30))

    steps = [
        ("parse: botocore as it comes (JSON)", botocore_parse(page, as_it_comes=True)),
        ("parse: botocore, our timestamps (JSON), before", botocore_parse(page)),
        ("parse: msgspec, typed (JSON), the fast path", lambda: decode_json(page)),
    ]
    try:
        steps.append(("parse: cbor2 (CBOR), then columns", cbor_columns(cbor_page(page))))
    except ImportError:
        print("cbor2 is not installed: the CBOR row is left out")

    def written() -> Any:
        import io

        import pyarrow.parquet as pq

        from kinesis_batch.columns import dictionary_encoded

        (batch,) = at_once()
        with pq.ParquetWriter(io.BytesIO(), batch.schema, use_dictionary=dictionary_encoded(batch.schema)) as out:
            out.write_batch(batch)

    steps += [
        ("rows: Record objects, columns record by record", per_record),
        ("rows: columns at once", at_once),
        ("write: the row group into Parquet (rows built again first)", written),
    ]
    print(f"one page: {records:,} records of {args.size:,} B, {len(page) / 2**20:.1f} MiB of JSON; best of {repeat}")
    print("| step | ms of CPU a page | CPU s per GiB |\n|---|---|---|")
    for name, call in steps:
        seconds = best(call, repeat)
        print(f"| {name} | {seconds * 1000:.1f} | {seconds / gib:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
