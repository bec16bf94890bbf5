#!/usr/bin/env bash
# Where a scrape's CPU goes, counted in instructions (deterministic, unlike
# time on a shared machine): the agent runs under valgrind's callgrind with
# instrumentation off, curl scrapes /metrics over one kept-alive connection while
# instrumentation is on, and the profile's top functions (self cost) are printed
# with the instructions per scrape.
#
#   bench/scrape_profile.sh build/release/gpulens [SCRAPES]   # default 2000
#
# Environment: ENCODING ("" or gzip, sent as Accept-Encoding). Needs
# valgrind, curl. Kernel work (the send itself) is not in the count.
set -euo pipefail
GPULENS=$(realpath "$1")
N=${2:-2000}
ENCODING=${ENCODING:-}
work=$(mktemp -d)
pid=
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/cg.out" \
  "$GPULENS" serve --source sim --listen "127.0.0.1:$port" --interval 1s >"$work/agent.log" 2>&1 &
pid=$!
for _ in $(seq 600); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.2; done
hdr=()
[[ -n "$ENCODING" ]] && hdr=(-H "Accept-Encoding: $ENCODING")
curl -s "${hdr[@]}" "http://127.0.0.1:$port/metrics" -o "$work/page"
for _ in $(seq "$N"); do printf 'url = "http://127.0.0.1:%s/metrics"\noutput = "/dev/null"\n' "$port"; done >"$work/urls"
callgrind_control -i on "$pid" >/dev/null
curl -s "${hdr[@]}" -K "$work/urls"
callgrind_control -i off "$pid" >/dev/null
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
pid=
total=$(callgrind_annotate "$work/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "$(basename "$GPULENS"): $N scrapes of a $(wc -c <"$work/page")-byte page${ENCODING:+ ($ENCODING)}:" \
  "$total instructions, $((total / N)) per scrape (user space; the agent's sampling in the same seconds included)"
callgrind_annotate --threshold=95 "$work/cg.out" 2>/dev/null | sed -n '/^Ir/,$p' | head -25
