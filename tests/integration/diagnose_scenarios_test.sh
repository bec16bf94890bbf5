#!/usr/bin/env bash
# Every simulator scenario yields its expected top cause from its own
# recording: `gpulens record --source sim --scenario S` (virtual time), then
# `gpulens diagnose --replay`. A scenario's `expect: {cause: C, gpus: all|[i,...]}`
# names the cause on those GPUs; the other GPUs, and scenarios without
# `expect` (healthy ones), must have no warning. demo-tour mixes phases and is
# skipped.
#
#   diagnose_scenarios_test.sh GPULENS SOURCE_DIR
set -euo pipefail
gpulens=$1 src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for f in "$src"/scenarios/*.yaml; do
  name=$(basename "$f" .yaml)
  [[ $name == demo-tour ]] && continue
  "$gpulens" record --source sim --scenario "$f" --duration 20m --interval 15s --out "$tmp/$name.om" 2> "$tmp/err" \
    || { echo "FAIL $name: record: $(cat "$tmp/err")"; failed=1; continue; }
  "$gpulens" diagnose --replay "$tmp/$name.om" --format json --fail-on never > "$tmp/$name.json" 2> "$tmp/err" \
    || { echo "FAIL $name: diagnose: $(cat "$tmp/err")"; failed=1; continue; }
  python3 - "$f" "$tmp/$name.json" <<'PY' || failed=1
import json, re, sys
spec, report = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
name = sys.argv[1].rsplit("/", 1)[-1]
m = re.search(r"^expect:\s*\{cause:\s*(\w+),\s*gpus:\s*(all|\[[0-9, ]*\])\}", spec, re.M)
cause, gpus = (m.group(1), m.group(2)) if m else ("-", "all")
want = None if gpus == "all" else {g.strip() for g in gpus.strip("[]").split(",")}
bad = []
for h in report["hosts"]:
    for g in h["gpus"]:
        f = g["findings"]
        top = f[0]["cause"] if f else "-"
        sev = f[0]["severity"] if f else "-"
        target = want is None or g["gpu"] in want
        if cause != "-" and target:
            ok = top == cause and (sev != "info" or cause == "small_batch")
        else:
            ok = not f or sev == "info"
        if not ok:
            bad.append(f'GPU {g["gpu"]}: {top}/{sev}')
print(("ok   " if not bad else "FAIL ") + f"{name}: want {cause} on {gpus}" + ("" if not bad else "; got " + ", ".join(bad)))
sys.exit(1 if bad else 0)
PY
done
exit $failed
