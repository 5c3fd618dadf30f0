"""The backfill DAG's form and what a backfill reads with.

The form offers every stream setting a catch-up run has (kinesis_batch.settings: the same
fields, types, choices and bounds), each empty by default: empty means the stream's own, as its
streams-file entry sets it (or, for a stream not in the file, the defaults with the main output
of ``[kinesis_batch]``). So a backfill of a stream of changes or of a routed stream reads it as
its hourly runs do, and the form can still change any of it. The form's own fields say where
the backfill goes: ``format``, ``output`` and ``catalog`` are the backfill's output (empty: next
to the main one, kinesis_batch.backfill.plan), ``table`` the main lease table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import Field
from typing import Any

from airflow.sdk import Param

from kinesis_batch import defaults
from kinesis_batch.airflow.params import setting_param
from kinesis_batch.output import Output
from kinesis_batch.output.formats import FORMATS
from kinesis_batch.settings import AIRFLOW, StreamSettings, offered

#: The form's own fields (the backfill's output; the main lease table), and the end-of-run
#: checks, which a backfill (no check_lag task) has none of.
OWN = ("stream", "output", "format", "catalog", "table")
CHECKS = ("lag_threshold_seconds", "dead_letter_threshold")
START_PATTERN = r"^(trim_horizon|at_timestamp=.+|run=.+|after_sequence=[0-9]+)$"


def settings_offered() -> list[Field[Any]]:
    """The stream settings the backfill form offers as the stream's own, overridable."""
    return [option for option in offered(AIRFLOW) if option.name not in OWN + CHECKS]


def backfill_params(streams: Iterable[str], main: Output) -> dict[str, Param]:
    """The backfill DAG's form: ``streams`` (the configured ones) offered as examples, ``main``
    the output a backfill's own output is derived from."""
    named = list(streams)
    examples: dict[str, Any] = {"default": named[0], "examples": named} if named else {}
    return {
        "stream": Param(
            type="string",
            minLength=1,
            maxLength=128,
            **examples,
            description="a stream of the streams file, or any other",
        ),
        "shards": Param([], type="array", items={"type": "string"}, description="shard ids; empty: all"),
        "start": Param(
            defaults.BACKFILL_START,
            type="string",
            pattern=START_PATTERN,
            description="trim_horizon | at_timestamp=ISO8601 | run=RUN_ID (from the history) | after_sequence=N",
        ),
        "end": Param("", type="string", description="ISO 8601 arrival time to stop at; empty: the tip"),
        "format": Param(main.format, type="string", enum=list(FORMATS)),
        "output": Param(
            "",
            type="string",
            description="empty: a table of the backfill's own next to the main output "
            f"({main.format} {main.output}; a routed stream's: next to each of its tables); else a folder, "
            "table path or URI, or NAMESPACE.TABLE ({route} in it for a routed stream)",
        ),
        "catalog": Param(
            main.catalog or "", type="string", description="iceberg: a pyiceberg catalog name; empty: the default"
        ),
        "move_main_checkpoints": Param(False, type="boolean"),
        "table": Param("", type="string", description="main lease table (default kinesis-batch-STREAM)"),
        "spark_conn_id": Param(
            "", type="string", description="a Spark connection: spark-submit the read step to that cluster instead"
        ),
        "aws_conn_id": Param(defaults.AWS_CONN_ID, type="string"),
        **{option.name: own_param(option) for option in settings_offered()},
    }


def own_param(option: Field[Any]) -> Param:
    """A stream setting as a form field that is empty (the stream's own) unless changed: its
    type, choices and bounds as the catch-up DAG's form has them."""
    param = setting_param(option, option.default)
    schema = dict(param.schema)
    kinds = schema.get("type", [])
    schema["type"] = sorted({"null", *([kinds] if isinstance(kinds, str) else kinds)})
    if "enum" in schema:
        schema["enum"] = [None, *schema["enum"]]
    schema["description"] = f"{schema.get('description', '')} (empty: the stream's own)".lstrip()
    return Param(None, **schema)


def main_settings(params: Mapping[str, Any], entries: Mapping[str, StreamSettings], main: Output) -> dict[str, Any]:
    """The settings of the consumer a backfill reads like, by field: the stream's entry in the
    streams file (``entries``, by stream), else the defaults on ``main``'s output (or, when the
    form names the backfill's output, on that one: the main output only names a derived one);
    then every setting the form changed. An entry's ``format``/``output``/``catalog`` stay the
    main consumer's (the form's are the backfill's output); ``table`` is the form's when given."""
    stream = str(params["stream"])
    entry = entries.get(stream)
    if entry is not None:
        base: dict[str, Any] = entry.to_json()
    elif params.get("output"):  # no main output known but the one the backfill is derived from: its own
        base = {"format": params.get("format") or main.format, "output": params["output"]}
        base["catalog"] = params.get("catalog") or (main.catalog if base["format"] == main.format else "") or ""
    else:
        base = {"format": main.format, "output": main.output, "catalog": main.catalog or ""}
    changed = {option.name: params[option.name] for option in settings_offered() if params.get(option.name) is not None}
    table = {"table": params["table"]} if params.get("table") else {}
    return {**base, **changed, **table, "stream": stream}


__all__ = ["CHECKS", "OWN", "backfill_params", "main_settings", "own_param", "settings_offered"]
