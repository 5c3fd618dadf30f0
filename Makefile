# The two commands of the README. Both set up .venv (and the emulators) themselves.
.PHONY: demo test lint

demo:
	@tools/bootstrap.sh
	.venv/bin/python -P -m kinesis_batch.demo  # -P: the package as installed, not the checkout's metadata twice

test:
	@tools/bootstrap.sh
	.venv/bin/ruff check kinesis_batch spark_jobs dags tests benchmarks
	.venv/bin/ruff format --check kinesis_batch spark_jobs dags tests benchmarks
	.venv/bin/mypy
	.venv/bin/python -m pytest -n 2 --dist worksteal  # two workers; the slow files first (tests/conftest.py)

lint:
	.venv/bin/ruff check kinesis_batch spark_jobs dags tests benchmarks && .venv/bin/ruff format --check kinesis_batch spark_jobs dags tests benchmarks && .venv/bin/mypy
