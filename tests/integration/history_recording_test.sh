#!/usr/bin/env bash
# The history's compression on real data: an hour of a VM's host source at
# 1 s (tests/data/recordings/host-1h.om.gz) stored the way the agent's
# recorder stores it (bench/history_bench) takes at most 2 bytes per stored
# value, chunk headers and record times included.
set -euo pipefail
bench=$1 recording=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gzip -dc "$recording" > "$tmp/recording.om"
"$bench" "$tmp/recording.om" --benchmark_filter=NONE > "$tmp/out.txt" 2>&1
cat "$tmp/out.txt"
python3 - "$tmp/out.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"(\d+) series x (\d+) records .*: ([0-9.]+) bytes per stored value", text)
if not m:
    sys.exit("history_bench printed no bytes per stored value")
series, records, per_value = int(m.group(1)), int(m.group(2)), float(m.group(3))
if series != 32 or records != 3601:
    sys.exit(f"expected 32 series x 3601 records, read {series} x {records}")
if per_value > 2.0:
    sys.exit(f"{per_value} bytes per stored value on the real recording: above the 2-byte target")
print(f"ok: {per_value} bytes per stored value (target <= 2)")
PY
