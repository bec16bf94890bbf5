#!/usr/bin/env bash
# The README's metric reference is exactly what `gpulens catalog` prints, and
# every shipped scenario is listed in the README's scenario table, and
# docs/config.md's key table is exactly what `gpulens check-config --keys` prints.
set -euo pipefail
GPULENS=$1
ROOT=$2
"$GPULENS" catalog > "${TMPDIR:-/tmp}/catalog.$$"
"$GPULENS" check-config --keys > "${TMPDIR:-/tmp}/keys.$$"
trap 'rm -f "${TMPDIR:-/tmp}/catalog.$$" "${TMPDIR:-/tmp}/keys.$$"' EXIT
if ! python3 -c 'import sys; sys.exit(open(sys.argv[2]).read() not in open(sys.argv[1]).read())' \
    "$ROOT/docs/config.md" "${TMPDIR:-/tmp}/keys.$$"; then
  echo "docs/config.md's key table differs from \`gpulens check-config --keys\`: paste its output there" >&2
  exit 1
fi
python3 - "$ROOT/README.md" "${TMPDIR:-/tmp}/catalog.$$" "$ROOT/scenarios" <<'PY'
import os, sys
readme, catalog, scenarios = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
if catalog not in readme:
    sys.exit("README.md's metric table differs from `gpulens catalog`: paste its output into the README")
missing = [f[:-5] for f in os.listdir(scenarios) if f.endswith(".yaml") and f"`{f[:-5]}`" not in readme]
if missing:
    sys.exit(f"scenarios missing from README.md: {missing}")
PY
echo "README in sync with the catalog and scenarios"
