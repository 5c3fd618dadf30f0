#!/usr/bin/env bash
# make test-compat: the compatibility matrix. Each environment is built here (in .compat/NAME, like
# .venv: again only when its inputs change) and runs the tests of what it varies; each one's time
# is printed. make test runs everything on constraints.txt's newest set.
#
#   spark-3.5    the tests that touch Spark on PySpark 3.5.0, the oldest we claim (EMR 7, Glue 5,
#                Databricks 15.4/16.4), the rest as constraints.txt
#   spark-4.0    the same on PySpark 4.0.2 (emr-spark-8.0.0; Databricks 17.3 runs 4.0.0)
#   mwaa-3.3.1   Amazon MWAA 3.3.1's package set (Airflow 3.3.1, providers-amazon 9.34.0, pandas 3,
#                pyarrow 25, pyiceberg 0.11.1...) with Dagster and deltalake at their lowest claimed
#                versions (tools/compat/lowest.txt): the Airflow, Dagster and table tests. MWAA runs
#                Python 3.12; this machine has 3.11 only, which stands in for it, with the few
#                releases of the set that need 3.12 replaced (tools/compat/mwaa-on-3.11.txt).
#
# Usage: tools/compat.sh [NAME...]   (default: all three)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '[compat] %s\n' "$*" >&2; }

tools/bootstrap.sh  # .venv's uv, Java, the emulators: shared by every environment
uv=$root/.venv/bin/uv
mwaa=tools/compat/mwaa/mwaa-3.3.1-constraints-3.12.txt  # MWAA's own file, unchanged (its README)

# The tests that touch Spark: the read step and its task, whole runs in every format, the
# spark-submitted read step (a cluster), a killed task's retry, Spark Connect (4.x only).
SPARK_TESTS=(tests/spark tests/run tests/cli/test_submit.py tests/dags/test_kinesis_catchup_on_a_cluster.py tests/scenarios/test_run_formats.py
  tests/scenarios/test_run_grouped.py tests/scenarios/test_spark_connect.py tests/decoding/test_runs.py)
# Airflow (its UI too), the DAGs, Dagster, and the table libraries. The read step as an EMR
# Serverless job run is make test's: the job's side runs the archive's packages, whatever this
# set holds, and the orchestrator's side is the same DAG and asset code these tests run.
MWAA_TESTS=(tests/airflow tests/dags tests/dagster tests/output tests/maintenance/test_maintain.py -k "not emr_serverless")

# build NAME PYSPARK CONSTRAINT_FILE...: .compat/NAME with kinesis-batch[dev] under those
# constraints, pyspark PYSPARK from the wheelhouse (tools/wheelhouse.sh).
build() {
  local name=$1 pyspark=$2; shift 2
  local venv=.compat/$name stamp=.compat/$name/.kinesis-batch-installed
  local want
  want=$(cat pyproject.toml tools/compat.sh "$@" | sha256sum | cut -d' ' -f1)  # the recipe too
  if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then return; fi
  say "building $venv"
  rm -rf "$venv"
  # --seed: pip too, as a venv of python -m venv has (kinesis-batch package runs pip's resolver)
  "$uv" venv -q --seed --python "$root/.venv/bin/python" "$venv"
  local constraints=()
  for file in "$@"; do constraints+=(-c "$file"); done
  local wheels
  wheels=$(tools/wheelhouse.sh .venv/bin/python "$pyspark")
  VIRTUAL_ENV=$root/$venv "$uv" pip install -q --compile-bytecode ${wheels:+--find-links "$wheels"} "${constraints[@]}" -e ".[dev]"
  rm -rf kinesis_batch.egg-info  # as tools/bootstrap.sh says: a second sighting of our plugin
  "$uv" cache prune -q  # as tools/bootstrap.sh says: what it fetched again, once
  echo "$want" > "$stamp"
}

# run NAME TESTS...: the tests in .compat/NAME, timed.
run() {
  local name=$1; shift
  local started=$SECONDS
  say "$name: $(.compat/"$name"/bin/python -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("pyspark", "apache-airflow", "apache-airflow-providers-amazon", "dagster", "deltalake", "pyiceberg", "pyarrow", "pandas")))')"
  local code=0
  .compat/"$name"/bin/python -m pytest -n 2 --dist worksteal -q -p no:cacheprovider "$@" || code=$?
  say "$name: $((SECONDS - started)) s, exit $code"
  return $code
}

mkdir -p .compat
failed=()
# pip resolves the built wheel with an Airflow environment's extras under MWAA 3.3.1's set, for
# Python 3.12 on x86_64 and aarch64 (tests/test_package.py).
started=$SECONDS
say "installability: the wheel under MWAA 3.3.1's set, Python 3.12, x86_64 and aarch64"
KINESIS_BATCH_COMPAT=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_package.py -k resolves \
  || failed+=(installability)
say "installability: $((SECONDS - started)) s"
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(spark-3.5 spark-4.0 mwaa-3.3.1)
for name in "${names[@]}"; do
  started=$SECONDS
  case $name in
    spark-3.5|spark-4.0)
      version=$([[ $name == spark-3.5 ]] && echo 3.5.0 || echo 4.0.2)
      pins=.compat/$name.txt
      # constraints.txt with pyspark moved to this version (and py4j to what it takes)
      { grep -viE '^(pyspark|py4j)==' constraints.txt; echo "pyspark==$version"; } > "$pins"
      build "$name" "$version" "$pins"
      run "$name" "${SPARK_TESTS[@]}" || failed+=("$name")
      ;;
    mwaa-3.3.1)
      pins=.compat/mwaa-3.3.1.txt
      overridden=$(grep -v '^#' tools/compat/mwaa-on-3.11.txt | cut -d= -f1 | paste -sd'|')
      grep -viE "^($overridden)==" "$mwaa" > "$pins"
      # MWAA's set pins no pyspark (its workers run no Spark driver): the newest, constraints.txt's
      build "$name" "$(sed -n 's/^pyspark==//p' constraints.txt)" "$pins" tools/compat/lowest.txt tools/compat/mwaa-on-3.11.txt
      run "$name" "${MWAA_TESTS[@]}" || failed+=("$name")
      ;;
    *) say "no such environment: $name (spark-3.5, spark-4.0, mwaa-3.3.1)"; exit 2 ;;
  esac
  say "$name: $((SECONDS - started)) s with its build"
done
if [[ ${#failed[@]} -gt 0 ]]; then say "failed: ${failed[*]}"; exit 1; fi
say "every environment passed"
