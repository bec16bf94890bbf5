#!/usr/bin/env bash
# CPU of `gpulens top` at its default 1 s refresh, in a real terminal (tmux),
# against a local agent with 8 simulated GPUs and an hour of history; the
# agent's CPU over the same time beside it (what top's requests cost it).
# Usage: bench/top_cpu.sh BUILD_DIR [seconds, default 60]
set -euo pipefail
gpulens=$1/gpulens
secs=${2:-60}
work=$(mktemp -d)
sock=$work/tmux.sock
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$gpulens" serve --listen "127.0.0.1:$port" --source sim --sim-prefill 1h 2>/dev/null &
agent=$!
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; kill $agent 2>/dev/null || true; rm -rf "$work"' EXIT
until curl -fs -o /dev/null "http://127.0.0.1:$port/healthz"; do sleep 0.2; done
tmux -S "$sock" -f /dev/null new-session -d -s top -x 160 -y 50 "env LANG=C.UTF-8 $gpulens top --url 127.0.0.1:$port"
sleep 3
top_pid=$(pgrep -P "$(tmux -S "$sock" display-message -p -t top '#{pane_pid}')" gpulens || tmux -S "$sock" display-message -p -t top '#{pane_pid}')
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime
hz=$(getconf CLK_TCK)
t0=$(ticks "$top_pid") a0=$(ticks "$agent")
sleep "$secs"
t1=$(ticks "$top_pid") a1=$(ticks "$agent")
awk -v t=$((t1 - t0)) -v a=$((a1 - a0)) -v hz="$hz" -v s="$secs" 'BEGIN {
  printf "gpulens top, 1 s refresh, 160x50, 8 GPUs: %.2f %% of a core (%d ticks in %d s)\n", 100 * t / hz / s, t, s
  printf "the agent meanwhile (sampling at 1 s and answering top): %.2f %% of a core\n", 100 * a / hz / s }'
