# The two commands of the README. Both set up .venv (and the emulators) themselves.
.PHONY: demo test check lint test-oracle test-groups test-benchmarks test-compat test-mutants

SOURCES = kinesis_batch spark_jobs dags tests benchmarks tools/devkit
# Every tier's pytest runs through the cost report (tools/devkit/suite_cost.py): after pytest's
# summary it prints the tier's wall time, CPU seconds, JVMs started, ten most expensive tests, and
# its cost by kind and by folder, from the JUnit report it leaves in .venv/junit-TIER.xml.
COST = .venv/bin/python tools/devkit/suite_cost.py --tier  # a script: no PYTHONPATH for the tests to inherit

demo:
	@tools/bootstrap.sh
	@PYTHONPATH=tools .venv/bin/python -P -m devkit.demo  # the dev tools from the checkout; -P: not its metadata twice

# mypy (about 40 s on one core from a clean clone) runs beside pytest; its report follows
# pytest's. Either failing fails the target. Three workers on two cores: with two, the cores sat
# idle while the workers waited on processes.
test:
	@tools/bootstrap.sh
	.venv/bin/ruff check $(SOURCES)
	.venv/bin/ruff format --check $(SOURCES)
	@.venv/bin/mypy > .venv/mypy.log 2>&1 & mypy=$$!; \
	echo ".venv/bin/python -m pytest -n 3 --dist worksteal -m 'not benchmarks and not groups'  (mypy beside it)"; \
	$(COST) test -- .venv/bin/python -m pytest -n 3 --dist worksteal -m "not benchmarks and not groups"; tests=$$?; \
	wait $$mypy; types=$$?; echo ".venv/bin/mypy"; cat .venv/mypy.log; \
	test $$tests -eq 0 && test $$types -eq 0

# The fast tier, for a developer's loop: lint, types, and the tests that start no process (no
# emulator, moto, Spark, Airflow or command; tests/conftest.py marks the others "processes").
check:
	@tools/bootstrap.sh
	.venv/bin/ruff check $(SOURCES)
	.venv/bin/ruff format --check $(SOURCES)
	@.venv/bin/mypy > .venv/mypy.log 2>&1 & mypy=$$!; \
	KINESIS_BATCH_TESTS=fast $(COST) check -- .venv/bin/python -m pytest -n 2 --dist worksteal -q; tests=$$?; \
	wait $$mypy; types=$$?; echo ".venv/bin/mypy"; cat .venv/mypy.log; \
	test $$tests -eq 0 && test $$types -eq 0

# The slower tier (CI runs it after make test): the property tests against the oracles, on 200
# drawn cases each instead of make test's derandomized handful: the changes path
# (tests/output/test_changes.py) for each output, local and on moto's S3, and the decoding
# pipeline (tests/decoding/test_oracle.py), plain, routed and with changes. About 11 minutes on 2 cores.
test-oracle:
	@tools/bootstrap.sh
	KINESIS_BATCH_ORACLE_EXAMPLES=200 $(COST) test-oracle -- .venv/bin/python -m pytest -n 2 --dist worksteal -q \
		tests/output/test_changes.py tests/decoding/test_oracle.py -k oracle

# The heaviest group scenarios (CI runs them after make test-oracle; marked "groups"): twelve
# streams through the command line killed -9 mid-read, the group's DAG and its Dagster job
# (tests/scenarios/test_group_of_twelve.py), a group of six killed -9 or told to stop
# mid-read (tests/scenarios/test_group_run.py), and the top of the hour at fleet size: twenty
# runs and three groups of four at once behind 1 DescribeStreamSummary a second
# (tests/scenarios/test_top_of_the_hour.py), and groups whose reads are EMR Serverless job runs
# (tests/scenarios/test_group_job_run.py: fifty streams in one job run, a mixed group, a split,
# a job run left behind by a kill -9). About 5 minutes on 2 cores.
test-groups:
	@tools/bootstrap.sh
	$(COST) test-groups -- .venv/bin/python -m pytest -n 2 --dist worksteal -q -m groups tests/scenarios

# The benchmarks' smallest forms (CI runs them after make test-groups), so none can rot: each
# starts its own endpoints and Spark and prints its figures; the test checks that they ran and
# drained everything, never how fast.
test-benchmarks:
	@tools/bootstrap.sh
	$(COST) test-benchmarks -- .venv/bin/python -m pytest -n 2 --dist worksteal -q -m benchmarks tests/test_benchmarks.py

# The compatibility matrix (CI runs it after make test-benchmarks): each environment installs the
# built wheel with a user's extras only (and the test tools apart), so an extra that lacks a
# dependency fails here, and runs the contract sets of what it varies (tests marked contract(SET)):
# spark on PySpark 3.5.0 and 4.0.2 (3.5's newest by name: tools/compat.sh spark-3.5-newest);
# airflow, dagster and tables on Amazon MWAA 3.3.1's package set on Python 3.12; spark, connect,
# airflow and dagster on Python 3.13. Built by tools/compat.sh in .compat/, each one's Python,
# versions and cost printed. docs/platforms.md says what each stands for.
test-compat:
	@tools/compat.sh

# Every deliberate fault of tests/mutants turns its tests red (by hand, before and after a change
# to the suite; `python -m tests.mutants --repo DIR` runs them against another checkout's suite).
test-mutants:
	@tools/bootstrap.sh
	.venv/bin/python -m tests.mutants

lint:
	.venv/bin/ruff check $(SOURCES) && .venv/bin/ruff format --check $(SOURCES) && .venv/bin/mypy
