#!/usr/bin/env bash
# One definition of a degraded PCIe link (src/diagnose/pcie_link.h): the
# same link states (tests/integration/pcie_link_cases.py: below max, below
# the calibrated link, calibrated on a degraded link, in use by copies at
# low utilisation, utilisation at the threshold, an idle down-shift, only a
# calibrated baseline...) fed to the alert GPUPCIeLinkDegraded that
# `gpulens rules` generates (its expr and `for`, run by promtool) and to the
# diagnosis rule (`gpulens diagnose --replay` of a recording of the same
# series): both give the expected verdict for every case, after `for` (10
# minutes of data: firing) and before it (4 minutes: nothing fires, the
# diagnosis says pending). About 1 s.
#
#   pcie_link_definition_test.sh GPULENS
#
# Exits 77 (skipped) when promtool is not installed.
set -euo pipefail
gpulens=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v promtool >/dev/null || { echo "SKIP: promtool not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$gpulens" rules > "$tmp/rules.yml"
for minutes in 10 4; do
  dir="$tmp/$minutes"
  mkdir -p "$dir"
  python3 "$here/pcie_link_cases.py" "$tmp/rules.yml" "$dir" "$minutes" > "$dir/expected"
  (cd "$dir" && promtool test rules link.test.yml > promtool.out 2>&1) \
    || fail "alert over $minutes min disagrees with the definition: $(cat "$dir/promtool.out")"
  rc=0
  "$gpulens" diagnose --replay "$dir/link.om" --format json > "$dir/report.json" || rc=$?
  [[ $rc == 0 || $rc == 3 ]] || fail "diagnose --replay exited $rc"
  python3 - "$dir/report.json" "$dir/expected" "$minutes" <<'PY' || fail "diagnosis over $minutes min disagrees with the definition"
import json, sys
report, expected, minutes = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
want = sorted(open(expected).read().split())
states = {}
for h in report["hosts"]:
    for g in h["gpus"]:
        for f in g["findings"]:
            if f["cause"] == "pcie_link_degraded":
                states[g["gpu"]] = f.get("state")
firing = sorted(g for g, s in states.items() if s == "firing")
pending = sorted(g for g, s in states.items() if s == "pending")
if minutes >= 5:
    ok = firing == want
else:
    ok = firing == [] and pending == want
print("expected degraded", want, "firing", firing, "pending", pending)
sys.exit(0 if ok else 1)
PY
done
echo "PASS: alert and diagnosis agree on every link state"
