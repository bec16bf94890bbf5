#!/usr/bin/env bash
# Replay speed side by side: `gpulens diagnose --replay` (parse + map +
# diagnose) and `promtool tsdb create-blocks-from openmetrics` (parse +
# write blocks) on the same 24 h, 8-GPU, 15 s recording from diagnose_bench.
#
#   bench/diagnose_vs_promtool.sh BUILD_DIR      # e.g. build/release
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bench/diagnose_bench" --write "$tmp/day.om"
printf 'recording: %s MiB, %s lines\n' "$(( $(stat -c %s "$tmp/day.om") >> 20 ))" "$(wc -l < "$tmp/day.om")"
cat "$tmp/day.om" > /dev/null   # both read from the page cache
measure() {
  /usr/bin/time -f '%e s, %M KiB peak RSS' "$@" > /dev/null 2> "$tmp/time" || true
  tail -1 "$tmp/time"
}
echo "gpulens diagnose --replay:          $(measure "$build/gpulens" diagnose --replay "$tmp/day.om")"
if command -v promtool > /dev/null; then
  echo "promtool create-blocks-from openmetrics: $(measure promtool tsdb create-blocks-from openmetrics "$tmp/day.om" "$tmp/blocks")"
fi
