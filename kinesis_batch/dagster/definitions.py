"""What ``dagster dev`` loads (``[tool.dagster]`` in pyproject.toml): every stream of the streams
file ``KINESIS_BATCH_DAGSTER_STREAMS`` names, else ``$DAGSTER_HOME/kinesis-batch-streams.toml``.
Five streams are five ``[[streams]]`` tables, not five modules."""

from kinesis_batch.dagster.defs import definitions_from_environment

defs = definitions_from_environment()
