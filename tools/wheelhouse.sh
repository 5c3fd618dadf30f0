#!/usr/bin/env bash
# tools/wheelhouse.sh PYTHON VERSION...: makes sure a wheel of each pyspark VERSION is in this
# machine's wheelhouse (built once, with PYTHON's pip) and prints the folder, for uv's
# --find-links. tools/bootstrap.sh and tools/compat.sh use it.
#
# Why: PyPI has pyspark as an sdist only (455 MB for 4.3.0). uv keeps what it built only while
# the file host's answer can be revalidated; behind a registry proxy that strips the validators
# (this machine's), it downloaded and built pyspark again for every venv, about 20 s each. From
# the wheelhouse the install takes under a second. Building a wheel takes about 25 s, once.
set -euo pipefail
python=$1; shift
wheels=${KINESIS_BATCH_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/kinesis-batch/wheels}
mkdir -p "$wheels"
for version in "$@"; do
  if compgen -G "$wheels/pyspark-$version-*.whl" >/dev/null; then continue; fi
  printf '[wheelhouse] building a wheel of pyspark %s in %s (once)\n' "$version" "$wheels" >&2
  # Built aside, then moved in whole: a bootstrap beside this one sees the wheel complete or not at all.
  building=$(mktemp -d "$wheels/.building.XXXXXX")
  trap 'rm -rf "$building"' EXIT
  # -qq: pip's errors, not its warnings (a pip.conf naming index folders a machine lacks warns).
  "$python" -m pip wheel -qq --no-deps --no-cache-dir -w "$building" "pyspark==$version"
  mv "$building"/pyspark-"$version"-*.whl "$wheels"/
  rm -rf "$building"
done
echo "$wheels"
