#!/usr/bin/env bash
# Set up everything kinesis-batch needs on a fresh machine, idempotently:
#   .venv at the repo root (Python 3.11, pinned by constraints.txt), the npm Kinesis emulators,
#   and a check for Java 17+ (Spark). Re-running it is cheap when nothing changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

say() { printf '[bootstrap] %s\n' "$*" >&2; }
die() { printf '[bootstrap] error: %s\n' "$*" >&2; exit 1; }

python=""
for candidate in python3.11 python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    python=$candidate; break
  fi
done
[[ -n $python ]] || die "Python 3.11 is needed (python3.11 on PATH). On Debian/Ubuntu: apt-get install python3.11 python3.11-venv; or use pyenv."

# Java 17+ for Spark. Installed with apt where we may; otherwise say how.
java_major() { java -version 2>&1 | sed -nE 's/.*version "([0-9]+).*/\1/p' | head -1; }
if ! command -v java >/dev/null || [[ $(java_major) -lt 17 ]]; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    say "installing Java 17 (openjdk-17-jre-headless) for Spark"
    apt-get update -qq && apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless >/dev/null
  else
    die "Java 17 or newer is needed by Spark. Install it (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17) and put java on PATH, or set JAVA_HOME."
  fi
fi

# docker-compose (Debian's 1.29, no engine needed) validates docker-compose.yml in the tests.
if ! command -v docker-compose >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  say "installing docker-compose (to validate docker-compose.yml; no Docker engine is needed)"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
fi

# Chromium (Debian's) for the UI test, driven by Playwright with the system browser.
if ! command -v chromium >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  say "installing chromium (the headless browser of the Airflow UI test)"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# Debian's Prometheus Pushgateway, which the tests of --metrics prometheus push to.
if [[ ! -x /usr/bin/prometheus-pushgateway ]] && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  say "installing prometheus-pushgateway (the tests of --metrics prometheus push to it)"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus-pushgateway >/dev/null
fi

command -v node >/dev/null && command -v npm >/dev/null \
  || die "Node.js and npm are needed for the local Kinesis emulators (Debian/Ubuntu: apt-get install nodejs npm)."

stamp=.venv/.kinesis-batch-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  [[ -x .venv/bin/python ]] || { say "creating .venv with $python"; "$python" -m venv .venv; }
  say "installing Python packages (pinned by constraints.txt; the first time takes a minute or two)"
  # uv installs the same pinned set about twice as fast as pip (parallel downloads and unpacking);
  # pip is the fallback, e.g. where only pip is configured for a private index. Bytecode is
  # compiled here (about 30 s), as pip does: else every process compiles what it imports, and
  # where PYTHONDONTWRITEBYTECODE is set (CI images often do) does so every time it starts.
  # -qq: pip's errors, not its warnings (a pip.conf naming index folders a machine lacks warns twice).
  # pyspark from this machine's wheelhouse (tools/wheelhouse.sh says why), else uv builds it.
  wheels=$(tools/wheelhouse.sh .venv/bin/python "$(sed -n 's/^pyspark==//p' constraints.txt)")
  if .venv/bin/python -m pip install -qq -c constraints.txt uv \
    && VIRTUAL_ENV="$root/.venv" .venv/bin/uv pip install -q --compile-bytecode ${wheels:+--find-links "$wheels"} -c constraints.txt -e ".[dev]"; then :
  else
    say "uv could not install them; installing with pip"
    .venv/bin/python -m pip install -q -c constraints.txt -e ".[dev]"
  fi
  # uv keeps a new copy of each sdist it fetches again. Where the file host's answers carry no
  # cache validators (as behind this machine's registry proxy), it fetches again at every
  # install: pyspark's grew the cache by a gigabyte a venv until CI found the disk full. Pruning
  # leaves one copy of each, in a second.
  if [[ -x .venv/bin/uv ]]; then .venv/bin/uv cache prune -q || say "could not prune uv's cache (uv cache dir)"; fi
  echo "$want" > "$stamp"
fi
# The editable build leaves kinesis_batch.egg-info in the project's root, where every process
# with the root on sys.path (pytest, python -m) finds the package a second time, beside its
# dist-info. Airflow 3.3's plugin loader stops at the first plugin it sees twice, and so never
# loads the plugins after it: the OpenLineage provider's among them. The dist-info suffices.
rm -rf kinesis_batch.egg-info
# The package itself is installed editable, so uv compiled none of it: its bytecode too, for
# the same reason (every run, Spark worker and Airflow task imports it). Quick when up to date.
.venv/bin/python -m compileall -q kinesis_batch >/dev/null

emulators=tools/emulators
if [[ ! -f $emulators/node_modules/.package-lock.json ]] || ! cmp -s "$emulators/package-lock.json" "$emulators/node_modules/.kinesis-batch-lock"; then
  say "installing the Kinesis emulators (kinesalite, kinesis-local) with npm ci"
  (cd "$emulators" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) || (cd "$emulators" && npm ci --no-audit --no-fund)
  cp "$emulators/package-lock.json" "$emulators/node_modules/.kinesis-batch-lock"
fi
# A class-data archive of local Spark's classes (kinesis_batch.spark.session): every local
# session starts about 4 s sooner.
archive=$(.venv/bin/python -c 'from kinesis_batch.spark.session import class_archive; print(class_archive())')
# Made again when Java, pyspark or what the archive loads (kinesis_batch/spark/session.py, the
# job form in engine.py) changes.
made_for="$(java -version 2>&1 | head -1), pyspark $(.venv/bin/python -c 'import pyspark; print(pyspark.__version__)'), $(cat kinesis_batch/spark/session.py kinesis_batch/spark/engine.py | sha256sum | cut -c1-12)"
if [[ ! -f $archive || $(cat "$archive.for" 2>/dev/null) != "$made_for" ]]; then
  mkdir -p "$(dirname "$archive")"
  say "writing local Spark's class-data archive (once; local Spark then starts about 4 s sooner)"
  if .venv/bin/python -m kinesis_batch.spark.session --class-archive >"$archive.log" 2>&1; then
    echo "$made_for" > "$archive.for"
  else
    say "could not write it (see $archive.log); local Spark starts without it"
  fi
fi
say "ready: $(.venv/bin/python --version), $(java -version 2>&1 | head -1), node $(node --version)"
