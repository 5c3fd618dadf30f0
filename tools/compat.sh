#!/usr/bin/env bash
# make test-compat: the compatibility matrix. Each environment is built here (in .compat/NAME, like
# .venv: again only when its inputs change) as users install kinesis-batch: the built wheel with
# a user's extras and nothing of [dev] (the test tools go in apart, tools/compat/test-tools.txt),
# so an extra that lacks a dependency fails here. Each runs the tests of what it varies, and
# prints its Python, its versions and its time. make test runs everything on constraints.txt's set.
#
#   spark-3.5.0      the tests that touch Spark on PySpark 3.5.0, the oldest we claim (EMR 7, Glue 5,
#                    Databricks 15.4), [spark,delta,iceberg,glue-protobuf,airflow]: no pandas, as users have it
#   spark-3.5-newest the same on 3.5's newest patch (Glue 5.1, Databricks 16.4 take later 3.5s): by
#                    name only (tools/compat.sh spark-3.5-newest), not in CI's default run: see below
#   spark-4.0        the same on PySpark 4.0.2 (emr-spark-8.0.0; Databricks 17.3 runs 4.0.0), with
#                    [spark-connect] too: the Spark Connect tests
#   mwaa-3.3.1       Amazon MWAA 3.3.1's package set on Python 3.12, MWAA's constraint file
#                    unchanged (Airflow 3.3.1, providers-amazon 9.34.0, pandas 3, pyarrow 25,
#                    pyiceberg 0.11.1...), Dagster and deltalake at their lowest claimed versions
#                    (tools/compat/lowest.txt): the Airflow, Dagster and table tests
#   py3.13           constraints.txt's set on Python 3.13 (it resolves there unchanged, adding
#                    pyyaml-ft, libcst's YAML on 3.13), every user-facing extra: the Spark tests
#                    (whole runs into every format: the table libraries on 3.13) and the Airflow,
#                    DAG and Dagster tests, the cluster's executors a bare 3.13
#
# Usage: tools/compat.sh [NAME...]   (default: all but spark-3.5-newest)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '[compat] %s\n' "$*" >&2; }

tools/bootstrap.sh  # .venv's uv, Java, the emulators: shared by every environment
uv=$root/.venv/bin/uv
mwaa=tools/compat/mwaa/mwaa-3.3.1-constraints-3.12.txt  # MWAA's own file, unchanged (its README)
newest_35=3.5.9  # PyPI's newest 3.5 when this was written

# Each environment runs the contract sets of what it varies (tests/conftest.py CONTRACTS: the tests
# marked contract(SET, why=...), where another version could behave otherwise), not whole folders:
# make test runs everything on constraints.txt's set. A test named by its id runs beside them.
#   spark    the read step into each format, whole runs, spark-submit to a cluster, job cancellation,
#            the worker daemon and the session on this PySpark (connect: on a Spark Connect server)
#   airflow  the DAGs parsed, catch-up, backfill, group and maintain run with dag.test(), the UI plugin
#   dagster  the definitions loaded and materialized, checks, sensor, termination, dagster dev
#   tables   each format's publish, read-back, merge and maintenance on the table libraries' versions
# and a fresh environment of the wheel with [spark,delta] alone on this PySpark (or MWAA's set).
# One list per environment (tests/test_compat.py checks that each set of each list selects tests).
FRESH=tests/test_package.py::test_the_wheel_with_spark_and_delta_alone_lands_a_resharded_stream_exactly_once_on_local_spark
# The Spark environments install no Dagster (their extras are a Spark user's): its modules stay out.
SPARK_3_TESTS=(tests --contract spark --ignore=tests/dagster --ignore=tests/status/test_views_unchanged.py
  "$FRESH[kinesalite-constraints]")
SPARK_4_TESTS=("${SPARK_3_TESTS[@]}" --contract connect)  # Spark Connect is 4.x's
MWAA_TESTS=(tests --contract airflow --contract dagster --contract tables "$FRESH[kinesalite-mwaa-3.3.1]")
# The table libraries' own contract runs on 3.11 and under MWAA's set; here the whole runs into
# every format (the spark set) carry the table libraries on 3.13.
PY313_TESTS=(tests --contract spark --contract connect --contract airflow --contract dagster "$FRESH[kinesalite-constraints]")

# interpreter VERSION: an interpreter of that version (on PATH, else pyenv's), or one line and exit 2.
interpreter() {
  local version=$1 found
  for found in "$(command -v "python$version" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version"*/bin/"python$version"; do
    if [[ -x $found ]] && "$found" -c 'import sys; sys.exit(0)' 2>/dev/null; then echo "$found"; return; fi
  done
  say "Python $version is needed for this environment (python$version on PATH, or pyenv install $version)"
  exit 2
}

# The wheel users install, built once per call from only what the build reads (no egg-info left
# in the checkout: tools/bootstrap.sh says why).
build_wheel() {
  local source dist=$root/.compat/dist
  source=$(mktemp -d)
  cp pyproject.toml README.md "$source"/
  cp -r kinesis_batch "$source"/
  find "$source" -name __pycache__ -prune -exec rm -rf {} +
  rm -rf "$dist"
  "$uv" build -q --wheel --out-dir "$dist" "$source"
  rm -rf "$source"
  wheel=$(ls "$dist"/kinesis_batch-*.whl)
}

# build NAME PYTHON PYSPARK EXTRAS CONSTRAINT_FILE...: .compat/NAME on PYTHON with the wheel and
# EXTRAS under those constraints, pyspark PYSPARK from the wheelhouse (tools/wheelhouse.sh), and
# the test tools. The wheel itself is installed again every time (a second; the code may differ).
build() {
  local name=$1 python=$2 pyspark=$3 extras=$4; shift 4
  local venv=.compat/$name stamp=.compat/$name/.kinesis-batch-installed
  local want constraints=() wheels
  want=$(cat pyproject.toml tools/compat.sh tools/compat/test-tools.txt "$@" | sha256sum | cut -d' ' -f1)  # the recipe too
  for file in "$@"; do constraints+=(-c "$file"); done
  wheels=$(tools/wheelhouse.sh .venv/bin/python "$pyspark")
  if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    say "building $venv"
    rm -rf "$venv"
    # --seed: pip too, as a venv of python -m venv has (kinesis-batch package runs pip's resolver)
    "$uv" venv -q --seed --python "$python" "$venv"
    VIRTUAL_ENV=$root/$venv "$uv" pip install -q --compile-bytecode ${wheels:+--find-links "$wheels"} "${constraints[@]}" \
      "pyspark==$pyspark" "$wheel[$extras]" -r tools/compat/test-tools.txt
    "$uv" cache prune -q  # as tools/bootstrap.sh says: what it fetched again, once
    echo "$want" > "$stamp"
  fi
  VIRTUAL_ENV=$root/$venv "$uv" pip install -q --reinstall-package kinesis-batch --no-deps "$wheel"
}

# run NAME TESTS...: the tests in .compat/NAME, timed.
run() {
  local name=$1; shift
  local started=$SECONDS
  say "$name: $(.compat/"$name"/bin/python -c 'import importlib.metadata as m, platform
def v(p):
    try: return m.version(p)
    except m.PackageNotFoundError: return "-"
print(f"Python {platform.python_version()}, " + ", ".join(f"{p} {v(p)}" for p in ("kinesis-batch", "pyspark", "apache-airflow", "apache-airflow-providers-amazon", "dagster", "deltalake", "pyiceberg", "pyarrow", "pandas")))')"
  local code=0
  .venv/bin/python tools/devkit/suite_cost.py --tier "compat $name" --kind "compat environment" --junit ".compat/junit-$name.xml" \
    -- .compat/"$name"/bin/python -m pytest -n 2 --dist worksteal -q -p no:cacheprovider "$@" || code=$?
  say "$name: $((SECONDS - started)) s, exit $code"
  return $code
}

mkdir -p .compat
build_wheel
failed=()
# pip resolves the built wheel with an Airflow environment's extras under MWAA 3.3.1's set, for
# Python 3.12 on x86_64 and aarch64 (tests/test_package.py).
started=$SECONDS
say "installability: the wheel under MWAA 3.3.1's set, Python 3.12, x86_64 and aarch64"
KINESIS_BATCH_COMPAT=1 .venv/bin/python tools/devkit/suite_cost.py --tier "compat installability" \
  --kind "compat environment" --junit .compat/junit-installability.xml \
  -- .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_package.py -k resolves || failed+=(installability)
say "installability: $((SECONDS - started)) s"
names=("$@")
# spark-3.5-newest is left out of the default: a patch release of 3.5 between the oldest (3.5.0) and
# 4.0 adds the least to what CI's whole run proves.
[[ ${#names[@]} -gt 0 ]] || names=(spark-3.5.0 spark-4.0 mwaa-3.3.1 py3.13)
for name in "${names[@]}"; do
  started=$SECONDS
  case $name in
    spark-3.5.0|spark-3.5-newest|spark-4.0)
      case $name in
        spark-3.5.0) version=3.5.0 extras=spark,delta,iceberg,glue-protobuf,airflow ;;
        spark-3.5-newest) version=$newest_35 extras=spark,delta,iceberg,glue-protobuf,airflow ;;
        *) version=4.0.2 extras=spark,spark-connect,delta,iceberg,glue-protobuf,airflow ;;
      esac
      pins=.compat/$name.txt
      # constraints.txt with pyspark moved to this version (and py4j to what it takes)
      { grep -viE '^(pyspark|py4j)==' constraints.txt; echo "pyspark==$version"; } > "$pins"
      build "$name" "$root/.venv/bin/python" "$version" "$extras" "$pins"
      if [[ $name == spark-4.0 ]]; then run "$name" "${SPARK_4_TESTS[@]}" || failed+=("$name")
      else run "$name" "${SPARK_3_TESTS[@]}" || failed+=("$name"); fi
      ;;
    mwaa-3.3.1)
      # MWAA's set pins no pyspark (its workers run no Spark driver): the DAG tests' local Spark
      # is constraints.txt's. Every extra an Airflow environment takes, and Dagster's.
      py312=$(interpreter 3.12) || exit 2
      build "$name" "$py312" "$(sed -n 's/^pyspark==//p' constraints.txt)" \
        spark,airflow,dagster,delta,iceberg,openlineage,metrics,glue-protobuf "$mwaa" tools/compat/lowest.txt
      run "$name" "${MWAA_TESTS[@]}" || failed+=("$name")
      ;;
    py3.13)
      py313=$(interpreter 3.13) || exit 2
      build "$name" "$py313" "$(sed -n 's/^pyspark==//p' constraints.txt)" \
        spark,spark-connect,airflow,dagster,delta,iceberg,openlineage,metrics,glue-protobuf constraints.txt
      run "$name" "${PY313_TESTS[@]}" || failed+=("$name")
      ;;
    *) say "no such environment: $name (spark-3.5.0, spark-3.5-newest, spark-4.0, mwaa-3.3.1, py3.13)"; exit 2 ;;
  esac
  say "$name: $((SECONDS - started)) s with its build"
done
if [[ ${#failed[@]} -gt 0 ]]; then say "failed: ${failed[*]}"; exit 1; fi
say "every environment passed"
