#!/usr/bin/env bash
# Scrape cost of two gpulens binaries side by side: both serve the same
# simulated node (8 GPUs, 1 s sampling), wrk scrapes /metrics over kept-alive
# connections, and each agent's CPU (utime + stime from /proc/PID/stat, all
# threads) is read around its runs. The runs alternate (old, new, new, old,
# ...) so that load from other work on the machine falls on both alike.
# Prints scrapes per CPU second for every run, the median of each binary and
# the ratio new / old. No pass or fail: a number to put beside a change.
#
#   bench/compare_scrape.sh OLD_BINARY NEW_BINARY [PEER_GO_SOURCE_DIR]
#
# With PEER_GO_SOURCE_DIR (shared/bench/peer-go, or a peer binary built from
# it) the Go client_golang peer is scraped in the same rounds, on the same
# number of series.
# Environment: ROUNDS (default 3), SECS per run (6), CONNS (wrk -c, 4),
# ENCODING ("" or gzip: sent as Accept-Encoding, as Prometheus does),
# FLOOR (the scrape_floor binary, build/release/bench/scrape_floor: it serves
# the new agent's page, byte for byte, with nothing but one sendmsg(2) per
# answer, in the same rounds; what it reaches is the most this machine allows
# for a page of that size, and the agents are shown as a share of it).
# Needs wrk, curl, bc.
set -euo pipefail
OLD=$(realpath "$1")
NEW=$(realpath "$2")
PEER_SRC=${3:-}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-6}
CONNS=${CONNS:-4}
ENCODING=${ENCODING:-}
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
wait_up() { for _ in $(seq 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; exit 1; }

declare -A PID URL
start_agent() {  # name binary
  local p
  p=$(free_port)
  "$2" serve --source sim --listen "127.0.0.1:$p" --interval 1s >"$work/$1.log" 2>&1 &
  pids+=($!)
  PID[$1]=$!
  URL[$1]="http://127.0.0.1:$p/metrics"
  wait_up "${URL[$1]}"
}
start_agent old "$OLD"
start_agent new "$NEW"
names=(old new)
if [[ -n "$PEER_SRC" ]]; then
  if [[ -f "$PEER_SRC" && -x "$PEER_SRC" ]]; then
    cp "$PEER_SRC" "$work/peer-go"  # a peer built already
  else
    (cd "$PEER_SRC" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/gocache" go build -o "$work/peer-go" .)
  fi
  series=$(curl -s "${URL[new]}" | grep -vc '^#')
  p=$(free_port)
  "$work/peer-go" -gpus 8 -metrics $(( (series + 7) / 8 )) -addr "127.0.0.1:$p" >"$work/peer.log" 2>&1 &
  pids+=($!)
  PID[peer]=$!
  URL[peer]="http://127.0.0.1:$p/metrics"
  wait_up "${URL[peer]}"
  names+=(peer)
fi
hdr=()
[[ -n "$ENCODING" ]] && hdr=(-H "Accept-Encoding: $ENCODING")
if [[ -n "${FLOOR:-}" ]]; then
  curl -s "${hdr[@]}" -o "$work/page" "${URL[new]}"
  p=$(free_port)
  "$FLOOR" "$work/page" "$p" $ENCODING >"$work/floor.log" 2>&1 &
  pids+=($!)
  PID[floor]=$!
  URL[floor]="http://127.0.0.1:$p/metrics"
  wait_up "${URL[floor]}"
  names+=(floor)
fi
sleep 2  # past start-up work
for n in "${names[@]}"; do
  bytes=$(curl -s "${hdr[@]}" "${URL[$n]}" | wc -c)
  echo "$n: $(basename "$(readlink -f "/proc/${PID[$n]}/exe")") pid ${PID[$n]}, page $bytes bytes${ENCODING:+ ($ENCODING)}"
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); wrk -t1 -c$CONNS -d${SECS}s per run, $ROUNDS rounds"

declare -A RESULTS
run() {  # name
  local n=$1 t0 t1 out reqs cpu
  t0=$(ticks "${PID[$n]}")
  out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" "${hdr[@]}" "${URL[$n]}")
  t1=$(ticks "${PID[$n]}")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  cpu=$(echo "scale=3; ($t1 - $t0) / $hz" | bc)
  local per
  per=$(echo "scale=0; $reqs / $cpu" | bc 2>/dev/null || echo 0)
  printf "  %-4s %8d scrapes  CPU %6.2f s  %8d scrapes per CPU second\n" "$n" "$reqs" "$cpu" "$per"
  RESULTS[$n]+="$per "
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  if (( r % 2 )); then order=(old new); else order=(new old); fi
  [[ -n "$PEER_SRC" ]] && order+=(peer)
  [[ -n "${FLOOR:-}" ]] && order+=(floor)
  for n in "${order[@]}"; do run "$n"; done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
m_old=$(echo "${RESULTS[old]}" | median)
m_new=$(echo "${RESULTS[new]}" | median)
echo "median scrapes per CPU second: old $m_old, new $m_new; new / old = $(echo "scale=2; $m_new / $m_old" | bc)"
if [[ -n "$PEER_SRC" ]]; then
  m_peer=$(echo "${RESULTS[peer]}" | median)
  echo "peer-go $m_peer; new / peer = $(echo "scale=1; $m_new / $m_peer" | bc), old / peer = $(echo "scale=1; $m_old / $m_peer" | bc)"
fi
if [[ -n "${FLOOR:-}" ]]; then
  m_floor=$(echo "${RESULTS[floor]}" | median)
  echo "floor $m_floor; new / floor = $(echo "scale=2; $m_new / $m_floor" | bc), old / floor = $(echo "scale=2; $m_old / $m_floor" | bc)"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
