#!/usr/bin/env bash
# `gpulens snapshot` and `gpulens top --once` at COLUMNS 40, 80, 120 and 200
# (the simulator): no line wider than COLUMNS, and nothing cut in the middle.
# snapshot (the same values in every run of a scenario with faults): every
# word of a narrow screen is a whole word of the same part of the full one
# (a table row of the same GPU's row, the text around the table in the same
# order), so "0.09" never shows as "0"; without COLUMNS, into a pipe, it is
# not narrowed, and at 200 it is the same as without a limit. top (live
# values, different in every run; its words are compared in top_test, the
# unit test): a finding's numbers are whole ("90.55 vs 80.00", "0.09 GPU-h
# lost"), and from 80 columns the GPU-hours lost are shown.
#
#   terminal_fit_test.sh GPULENS
set -euo pipefail
GPULENS=$1
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"

for scenario in xid-79 allocator-fragmentation; do
  env -u COLUMNS "$GPULENS" snapshot --source sim --scenario "$scenario" >"snap-$scenario-full.txt"
  for w in 40 80 120 200; do
    COLUMNS=$w "$GPULENS" snapshot --source sim --scenario "$scenario" >"snap-$scenario-$w.txt"
  done
done
for w in 40 80 120 200; do
  COLUMNS=$w "$GPULENS" top --once --source sim --scenario thermal-throttle-one-gpu --sim-prefill 20m >"top-$w.txt"
done

python3 - <<'PY' || fail "see above"
import re, sys

bad = []
def lines(path):
    # Times differ between runs.
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\dZ?", "TIME", text)
    return re.sub(r"\d\d:\d\d:\d\d", "TIME", text).split("\n")
def words(text):
    # Words: split at spaces and at the table's and bars' drawing characters.
    # A legend's item may end the legend (no ";" after it) when the columns
    # after it are left out.
    return [w.rstrip(";") for w in re.split(r"[ |\u2500-\u259f]+", text) if w.rstrip(";")]
row = re.compile(r"^(\d+) ")

def snapshot(name, w):
    full, narrow = lines(f"snap-{name}-full.txt"), lines(f"snap-{name}-{w}.txt")
    for l in narrow:
        if len(l) > w:
            bad.append(f"snapshot {name} COLUMNS={w}: {len(l)} columns: {l}")
    if w == 200 and full[1:] != narrow[1:]:
        bad.append(f"snapshot {name} COLUMNS=200 differs from the unlimited output")
    # Table rows: a row's words are words of the same GPU's full row.
    full_rows = {row.match(l).group(1): words(l) for l in full if row.match(l)}
    for l in narrow:
        m = row.match(l)
        if not m:
            continue
        extra = [x for x in words(l) if x not in full_rows[m.group(1)]]
        if extra:
            bad.append(f"snapshot {name} COLUMNS={w}: GPU {m.group(1)}: {extra} not whole in {full_rows[m.group(1)]}")
    # The text around the table (the time line left out): the same words in
    # the same order, wrapped; only the legend may lose the columns left out.
    def prose(ls):  # from the SIMULATED line on (the host line before it wraps)
        start = next(i for i, l in enumerate(ls) if l.startswith("SIMULATED"))
        return words(" ".join(l for l in ls[start:] if not row.match(l) and not l.startswith("GPU ")))
    want, got = prose(full), prose(narrow)
    i = 0
    for x in got:
        while i < len(want) and want[i] != x:
            i += 1
        if i == len(want):
            bad.append(f"snapshot {name} COLUMNS={w}: \"{x}\" is not a whole word of the full output, in order")
            break
        i += 1
    if w <= 120 and max(len(l) for l in full) <= w:
        bad.append(f"snapshot {name}: the full output already fits {w}: the test shows nothing")

def top(w):
    narrow = lines(f"top-{w}.txt")
    for b in narrow:
        if len(b) > w:
            bad.append(f"top COLUMNS={w}: {len(b)} columns: {b}")
    for b in narrow:
        # Evidence "SIGNAL VALUE vs THRESHOLD" whole, or not there at all.
        for m in re.finditer(r"(\S+) vs(?: (\S*))?", b):
            if not re.fullmatch(r"\d+(\.\d+)?", m.group(1)) or not re.fullmatch(r"\d+(\.\d+)?", m.group(2) or ""):
                bad.append(f"top COLUMNS={w}: evidence cut: {b}")
        for m in re.finditer(r"(\S*) GPU-h", b):
            if not re.fullmatch(r"\d+\.\d+", m.group(1)) or not b[m.end():].startswith(" lost"):
                bad.append(f"top COLUMNS={w}: GPU-hours cut: {b}")
    text = "\n".join(narrow)
    if w >= 80 and not re.search(r"\d+\.\d+ GPU-h lost", text):
        bad.append(f"top COLUMNS={w}: the finding lost its GPU-hours: {text}")

for name in ("xid-79", "allocator-fragmentation"):
    for w in (40, 80, 120, 200):
        snapshot(name, w)
for w in (40, 80, 120, 200):
    top(w)
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
echo "terminal fit: ok"
