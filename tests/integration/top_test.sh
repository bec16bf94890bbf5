#!/usr/bin/env bash
# `gpulens top` in a real terminal (tmux): against a simulated agent
# (thermal-throttle-one-gpu, prefilled), the screen shows all 8 GPUs, the
# thermal finding on GPU 5 only and the processes; it follows a resize,
# scrolls and pauses with keys, quits with q leaving the terminal as it was
# (exit 0, normal screen, cursor shown); an agent that stops answering is
# reported on the screen, not a crash, and top resumes when it is back. Also --once through a pipe, and the
# errors for a dead agent and for a missing terminal; and top on its own
# sources (the simulator inside the command).
#   top_test.sh GPULENS
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init tmux curl

port=$(free_port)
start_agent top "$port" --source sim --scenario thermal-throttle-one-gpu --sim-prefill 20m
base="http://127.0.0.1:$port"

# One tmux server of our own, gone on exit.
TMUX_SOCK="$STACK/tmux.sock"
tm() { tmux -S "$TMUX_SOCK" -f /dev/null "$@"; }
trap 'tm kill-server 2>/dev/null || true; stack_cleanup' EXIT
screen() { tm capture-pane -p -t top; }
# wait_screen PATTERN SECONDS: until the pane shows a line matching PATTERN.
wait_screen() {
  local deadline=$((SECONDS + $2))
  until screen | grep -E -- "$1" >/dev/null; do
    ((SECONDS < deadline)) || { screen >&2; stack_fail "the screen never showed /$1/"; }
    sleep 0.2
  done
}

tm new-session -d -s top -x 150 -y 45 "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $GPULENS top --url $base; echo top-exited-\$?; sleep 30"
tm set-option -t top remain-on-exit on >/dev/null
wait_screen '^ +7 H100' 15
wait_screen 'thermal_throttle' 15
s=$(screen)
echo "$s" | head -1 | grep "gpulens top  SIMULATED  · $base · 8 GPUs" >/dev/null || stack_fail "header: $(echo "$s" | head -1)"
for g in 0 1 2 3 4 5 6 7; do
  echo "$s" | grep -E "^ +$g H100 80GB HBM3 " >/dev/null || stack_fail "GPU $g not on the screen"
done
# The finding, on GPU 5 only; GPU 5's throttle reasons in its health column.
[[ $(echo "$s" | grep -c 'thermal_throttle') == 1 ]] || stack_fail "thermal_throttle shown $(echo "$s" | grep -c thermal_throttle) times"
echo "$s" | grep -E '^ +GPU 5 +WARNING +thermal_throttle +since' >/dev/null || stack_fail "the finding is not GPU 5's: $(echo "$s" | grep thermal)"
echo "$s" | grep -E '^ +5 H100.*°C [0-9]+W .*thermal' >/dev/null || stack_fail "GPU 5's health column does not show the throttle"
if echo "$s" | grep -E '^ +[0-46-7] H100' | grep thermal >/dev/null; then stack_fail "another GPU shows a thermal throttle"; fi
# History: a sparkline line under each GPU at this height.
echo "$s" | grep -A1 -E '^ +0 H100' | tail -1 | grep '▁\|▂\|▃\|▄\|▅\|▆\|▇\|█' >/dev/null || stack_fail "no sparkline under GPU 0"
echo "$s" | grep 'q quit' >/dev/null || stack_fail "no key help in the footer"
# Widest line in characters (not bytes).
widest() { python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in sys.stdin.buffer.read().decode().splitlines()))'; }
width=$(echo "$s" | widest)
((width > 100)) || stack_fail "at 150 columns the widest line is $width"

# Resize: narrower and shorter; every line fits and the GPUs go compact.
tm resize-window -t top -x 90 -y 20
wait_screen '^GPU NAME +COMPUTE +│' 10
s=$(screen)
w=$(echo "$s" | widest)
((w <= 90)) || stack_fail "a line is $w columns wide in a 90-column window"
echo "$s" | grep -E '^ +1 H100' >/dev/null || stack_fail "GPU 1 not visible after the resize"
row0=$(echo "$s" | grep -nE '^ +0 H100' | cut -d: -f1)
row1=$(echo "$s" | grep -nE '^ +1 H100' | cut -d: -f1)
((row1 == row0 + 1)) || stack_fail "at 20 lines the GPUs should be one line each (rows $row0, $row1)"
[[ $(echo "$s" | wc -l) -le 20 ]] || stack_fail "more lines than the window"

# Keys: scrolling down reaches the processes; p pauses; q quits cleanly.
tm send-keys -t top G
wait_screen '^PROCESSES' 10
wait_screen '^ +5 +3005 ' 5
tm send-keys -t top g
wait_screen '^ +0 H100' 5
tm send-keys -t top p
wait_screen 'PAUSED' 5
tm send-keys -t top p
wait_screen 'every 1s' 5

# The agent goes away: top says so and keeps the last screen.
kill "${STACK_PIDS[0]}"
wait "${STACK_PIDS[0]}" 2>/dev/null || true
wait_screen 'Connection refused.*showing' 10
screen | grep -E '^ +0 H100' >/dev/null || stack_fail "the last screen is gone after the agent stopped"
# ... and resumes by itself when the agent is back.
start_agent top2 "$port" --source sim --scenario thermal-throttle-one-gpu --sim-prefill 20m
deadline=$((SECONDS + 10))
while screen | grep 'Connection refused' >/dev/null; do
  ((SECONDS < deadline)) || stack_fail "top did not resume after the agent came back"
  sleep 0.2
done

tm send-keys -t top q
wait_screen '^top-exited-0$' 10
[[ $(tm display-message -p -t top '#{alternate_on}') == 0 ]] || stack_fail "top left the alternate screen on"
[[ $(tm display-message -p -t top '#{cursor_flag}') == 1 ]] || stack_fail "top left the cursor hidden"

# Its own sources (no --url): the simulator run inside the command.
tm new-session -d -s local -x 150 -y 45 "env LANG=C.UTF-8 $GPULENS top --source sim --scenario thermal-throttle-one-gpu --sim-prefill 10m; echo local-exited-\$?; sleep 30"
deadline=$((SECONDS + 15))
until tm capture-pane -p -t local | grep -E '^ +GPU 5 +WARNING +thermal_throttle' >/dev/null; do
  ((SECONDS < deadline)) || { tm capture-pane -p -t local >&2; stack_fail "top on its own sources never showed GPU 5's finding"; }
  sleep 0.2
done
tm capture-pane -p -t local | head -1 | grep 'local sources · 8 GPUs' >/dev/null || stack_fail "local header: $(tm capture-pane -p -t local | head -1)"
tm send-keys -t local q
deadline=$((SECONDS + 10))
until tm capture-pane -p -t local | grep '^local-exited-0$' >/dev/null; do
  ((SECONDS < deadline)) || stack_fail "top on its own sources did not quit with q"
  sleep 0.2
done

# --once through a pipe: one screen, no escapes; a dead agent is exit 1.
port=$(free_port)
start_agent once "$port" --source sim --scenario thermal-throttle-one-gpu --sim-prefill 10m
out=$(COLUMNS=120 "$GPULENS" top --once --url "127.0.0.1:$port")
grep -Eq '^ +7 H100' <<<"$out" || stack_fail "--once: no GPU 7"
grep -q 'FINDINGS' <<<"$out" || stack_fail "--once: no findings section"
if grep -q $'\033' <<<"$out"; then stack_fail "--once to a pipe wrote escapes"; fi
rc=0; err=$("$GPULENS" top --once --url "127.0.0.1:$(free_port)" 2>&1 >/dev/null) || rc=$?
((rc == 1)) && grep -q 'Connection refused' <<<"$err" || stack_fail "dead agent: rc=$rc $err"
rc=0; err=$("$GPULENS" top --url "127.0.0.1:$port" 2>&1 </dev/null | cat) || rc=$?
grep -q 'must be a terminal' <<<"$err" || stack_fail "no terminal: $err"
echo "PASS: top shows 8 GPUs, thermal_throttle on GPU 5 only, resizes, scrolls, pauses, survives the agent, quits cleanly"
