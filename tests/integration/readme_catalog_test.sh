#!/usr/bin/env bash
# docs/metrics.md's metric reference is exactly what `gpulens catalog` prints,
# every shipped scenario is listed in docs/how-it-works.md's scenario table, and
# docs/config.md's key table is exactly what `gpulens check-config --keys` prints.
set -euo pipefail
GPULENS=$1
ROOT=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GPULENS" catalog > "$tmp/catalog"
"$GPULENS" check-config --keys > "$tmp/keys"
if ! python3 -c 'import sys; sys.exit(open(sys.argv[2]).read() not in open(sys.argv[1]).read())' \
    "$ROOT/docs/config.md" "$tmp/keys"; then
  echo "docs/config.md's key table differs from \`gpulens check-config --keys\`: paste its output there" >&2
  exit 1
fi
python3 - "$ROOT/docs/metrics.md" "$tmp/catalog" "$ROOT/scenarios" "$ROOT/docs/how-it-works.md" <<'PY'
import os, sys
metrics, catalog, scenarios = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
readme = open(sys.argv[4]).read()
if catalog not in metrics:
    sys.exit("docs/metrics.md's metric table differs from `gpulens catalog`: paste its output there")
missing = [f[:-5] for f in os.listdir(scenarios) if f.endswith(".yaml") and f"`{f[:-5]}`" not in readme]
if missing:
    sys.exit(f"scenarios missing from docs/how-it-works.md: {missing}")
PY
echo "docs in sync with the catalog and scenarios"
