#!/usr/bin/env bash
# tools/wheelhouse.sh PYTHON VERSION...: makes sure a wheel of each pyspark VERSION is in this
# machine's wheelhouse (built once, with PYTHON's pip) and prints the folder, for uv's
# --find-links. tools/bootstrap.sh and tools/compat.sh use it. Where a wheel cannot be built,
# it says so in one line and prints nothing: uv then builds pyspark from the sdist, as before.
#
# Why: PyPI has pyspark as an sdist only (455 MB for 4.3.0). uv keeps what it built only while
# the file host's answer can be revalidated; behind a registry proxy that strips the validators
# (this machine's), it downloaded and built pyspark again for every venv, about 20 s each. From
# the wheelhouse the install takes under a second. Building a wheel takes about 25 s, once.
set -euo pipefail
python=$1; shift
wheels=${KINESIS_BATCH_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/kinesis-batch/wheels}
say() { printf '[wheelhouse] %s\n' "$*" >&2; }
mkdir -p "$wheels"
for version in "$@"; do
  if compgen -G "$wheels/pyspark-$version-*.whl" >/dev/null; then continue; fi
  say "building a wheel of pyspark $version in $wheels (once)"
  # Built aside, then moved in whole: a bootstrap beside this one sees the wheel complete or not at all.
  building=$(mktemp -d "$wheels/.building.XXXXXX")
  trap 'rm -rf "$building"' EXIT
  # -qq: pip's errors, not its warnings (a pip.conf naming index folders a machine lacks warns).
  if ! "$python" -m pip wheel -qq --no-deps --no-cache-dir -w "$building" "pyspark==$version"; then
    say "could not build pyspark $version's wheel; uv builds it from the sdist"
    exit 0
  fi
  mv "$building"/pyspark-"$version"-*.whl "$wheels"/
  rm -rf "$building"
done
echo "$wheels"
