#!/usr/bin/env bash
# Agent benchmarks on loopback, side by side with the article's exporter
# design (the Go client_golang peer in shared/bench/peer-go, built here):
#   1. scrapes/s and CPU seconds per 1000 scrapes, same series count, wrk
#   2. the agent at rest: CPU % of one core and RSS with 8 simulated GPUs at 1 s
#   3. start to first served scrape
# Usage: bench/agent.sh BUILD_DIR PEER_GO_SOURCE_DIR [seconds]
set -euo pipefail
build=$1
peer_src=$2
secs=${3:-10}
gpulens=$build/gpulens
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)"; exit 1; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime
hz=$(getconf CLK_TCK)
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# --- the peer -----------------------------------------------------------------
if [[ ! -x "$work/peer-go" ]]; then
  (cd "$peer_src" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/gocache" go build -o "$work/peer-go" .)
fi

# --- our agent on the simulator --------------------------------------------------
"$gpulens" serve --listen 127.0.0.1:19401 --source sim --interval 1s 2>/dev/null &
agent=$!
pids+=($agent)
sleep 2
series=$(curl -s 127.0.0.1:19401/metrics | grep -vc '^#')
per_gpu=$(( (series + 7) / 8 ))
"$work/peer-go" -gpus 8 -metrics "$per_gpu" -addr 127.0.0.1:19402 &
peer=$!
pids+=($peer)
sleep 2
peer_series=$(curl -s 127.0.0.1:19402/metrics | grep -vc '^#')

scrape() {  # name pid url
  local t0 t1 out rps
  t0=$(ticks "$2")
  out=$(wrk -t1 -c4 -d"${secs}s" "$3")
  t1=$(ticks "$2")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  local cpu=$(echo "scale=3; ($t1 - $t0) / $hz" | bc)
  local reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  local per1k=$(echo "scale=4; $cpu * 1000 / $reqs" | bc)
  local per_cpu=$(echo "scale=0; $reqs / $cpu" | bc)
  printf "| %s | %s | %s | %s | %s | %s |\n" "$1" "$4" "$rps" "$cpu" "$per1k" "$per_cpu"
}
echo "## scrape throughput, wrk -t1 -c4 -d${secs}s, loopback, $(nproc) cores"
echo "| exporter | series | scrapes/s | CPU s | CPU s per 1000 scrapes | scrapes per CPU s |"
echo "|---|---|---|---|---|---|"
scrape "gpulens (C++)" "$agent" "http://127.0.0.1:19401/metrics" "$series"
scrape "peer-go (client_golang)" "$peer" "http://127.0.0.1:19402/metrics" "$peer_series"
kill "$peer"

# --- at rest --------------------------------------------------------------------
t0=$(ticks "$agent"); sleep 30; t1=$(ticks "$agent")
echo
echo "## at rest: 8 simulated GPUs, 1 s interval, 1 h history, no scrapes, 30 s"
echo "CPU: $(echo "scale=3; ($t1 - $t0) * 100 / $hz / 30" | bc) % of one core; RSS: $(( $(rss_kib "$agent") / 1024 )) MiB"
kill "$agent"

# --- start to first scrape --------------------------------------------------------
echo
echo "## start to first served scrape (5 runs, ms)"
for i in 1 2 3 4 5; do
  s=$(date +%s%N)
  "$gpulens" serve --listen 127.0.0.1:19403 --source sim 2>/dev/null &
  p=$!
  until curl -sf -o /dev/null 127.0.0.1:19403/metrics; do sleep 0.002; done
  e=$(date +%s%N)
  kill "$p"; wait "$p" 2>/dev/null || true
  echo -n "$(( (e - s) / 1000000 )) "
done
echo
