"""What ``dagster dev`` loads (``[tool.dagster]`` in pyproject.toml): every stream of the TOML
file ``KINESIS_BATCH_DAGSTER_STREAMS`` names, by default deploy/dagster/streams.toml (run from
the checkout). Five streams are five ``[[streams]]`` tables, not five modules."""

from kinesis_batch.dagster.defs import definitions_from_environment

defs = definitions_from_environment()
