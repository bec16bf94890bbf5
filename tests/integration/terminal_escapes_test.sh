#!/usr/bin/env bash
# Strings from outside cannot drive the terminal (issue: escapes in pushed or
# scraped strings retitled the window, set the clipboard and cleared the
# screen). Under tmux, with set-clipboard on:
#   1. a control pane that prints the escapes itself: the title changes, a
#      clipboard buffer appears, the screen is cleared (so the checks can fail);
#   2. `snapshot --url` on an agent that holds a pushed label value (pool)
#      with ESC, OSC 0 (title), OSC 52 (clipboard), CSI 2J (clear) and a C1
#      CSI;
#   3. `top --url --once` and `snapshot --url` on a stand-in agent that
#      answers the real agent's documents with a hostile GPU model name and
#      source error text, and the pushed series as a process's (so snapshot
#      lists its pool);
# each leaves the pane title, the clipboard and the screen alone and shows
# the escapes as visible text ("^[]0;...").
#   terminal_escapes_test.sh GPULENS
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init tmux curl python3

port=$(free_port)
start_agent push "$port" --source sim --scenario allocator-fragmentation --push
base="http://127.0.0.1:$port"

ESC=$'\033' BEL=$'\007' C1CSI=$'\302\233'
title="${ESC}]0;PWNED${BEL}"
clip="${ESC}]52;c;cHduZWQ=${BEL}"
clear="${ESC}[2J${ESC}[H"

uuid=$(curl -fsS "$base/api/v1/current" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"][0]["uuid"])')
# The receiver keeps pool (namespace and pod come from the kubelet, not from
# pushes); a series without pid is the node-level one.
printf 'gpu_allocator_external_fragmentation_ratio{gpu_uuid="%s",pool="large%s%s%s%s"} 0.9\n' \
  "$uuid" "$title" "$clip" "$clear" "${C1CSI}2J" >"$STACK/push.txt"
code=$(curl -sS -o "$STACK/push.out" -w '%{http_code}' -X PUT --data-binary @"$STACK/push.txt" "$base/metrics/job/hostile/instance/x")
[[ $code == 200 ]] || stack_fail "the push was refused ($code): $(cat "$STACK/push.out")"
# The agent holds the strings (escaped in its JSON): what follows is a real test.
deadline=$((SECONDS + 15))
until curl -fsS "$base/api/v1/current" | grep -F 'pool=\"large\u001b]0;PWNED' >/dev/null; do
  ((SECONDS < deadline)) || stack_fail "the pushed label never reached /api/v1/current"
  sleep 0.3
done

# A stand-in agent: the real agent's documents, with a hostile model name
# and source error (a compromised or foreign agent answering top/snapshot).
sport=$(free_port)
python3 - "$sport" "$base" "$title$clip$clear${C1CSI}2J" >"$STACK/standin.log" 2>&1 <<'PY' &
import json, sys, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port, upstream, hostile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        try:
            with urllib.request.urlopen(upstream + self.path, timeout=10) as r:
                body, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            body, status = e.read(), e.code
        if self.path.startswith("/api/v1/current"):
            doc = json.loads(body)
            for g in doc["gpus"]:
                g["name"] = "H100" + hostile
                # The pushed series, as a process's (snapshot lists those).
                g["fields"] = {k.replace("{pool=", '{pid="4242",pool=') if "PWNED" in k else k: v
                               for k, v in g["fields"].items()}
                for x in g.get("series", []):
                    if "PWNED" in x["labels"].get("pool", ""):
                        x["labels"]["pid"] = "4242"
            doc["sources"].append({"name": "nvml" + hostile, "up": False, "error": "lost" + hostile})
            body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$sport/api/v1/current" 15
curl -fsS "http://127.0.0.1:$sport/api/v1/current" | grep -F 'H100\u001b]0;PWNED' >/dev/null || stack_fail "the stand-in does not answer the hostile name"

# One tmux server of our own, with OSC 52 honoured, gone on exit.
TMUX_SOCK="$STACK/tmux.sock"
printf 'set -g set-clipboard on\n' >"$STACK/tmux.conf"
tm() { tmux -S "$TMUX_SOCK" -f "$STACK/tmux.conf" "$@"; }
trap 'tm kill-server 2>/dev/null || true; stack_cleanup' EXIT

# run_pane NAME COMMAND: runs COMMAND in a fresh pane after a marker line,
# waits for it to end; the pane stays for the checks.
run_pane() {
  local name=$1 cmd=$2 deadline=$((SECONDS + 60))
  tm new-session -d -s "$name" -x 220 -y 70 \
    "printf 'MARKER-BEFORE\n'; env LANG=C.UTF-8 LC_ALL=C.UTF-8 COLUMNS=200 $cmd; echo PANE-DONE-\$?; sleep 60"
  until tm capture-pane -p -t "$name" | grep 'PANE-DONE-' >/dev/null; do
    ((SECONDS < deadline)) || { tm capture-pane -p -t "$name" >&2; stack_fail "$name: the command never finished"; }
    sleep 0.2
  done
}
# check_pane NAME [shown]: the title is the one tmux gave, no clipboard
# buffer, the marker still on the screen; with "shown", the escapes are on
# the screen as text.
check_pane() {
  local name=$1 want=${2:-} shown
  shown=$(tm capture-pane -p -t "$name")
  [[ $(tm display -p -t "$name" '#{pane_title}') != PWNED ]] || stack_fail "$name retitled the pane"
  [[ -z $(tm list-buffers) ]] || stack_fail "$name wrote the clipboard (OSC 52): $(tm list-buffers)"
  echo "$shown" | grep 'MARKER-BEFORE' >/dev/null || { echo "$shown" >&2; stack_fail "$name cleared the screen"; }
  echo "$shown" | grep 'PANE-DONE-0' >/dev/null || { echo "$shown" >&2; stack_fail "$name failed"; }
  [[ -z $want ]] || echo "$shown" | grep -F '^[]0;PWNED^G' >/dev/null || { echo "$shown" >&2; stack_fail "$name does not show the escape as text"; }
}

# 1. The control: raw escapes do act in this terminal.
run_pane control "printf '\\033]0;PWNED\\007\\033]52;c;cHduZWQ=\\007\\033[2J'"
[[ $(tm display -p -t control '#{pane_title}') == PWNED ]] || stack_fail "control: OSC 0 did not retitle the pane"
[[ -n $(tm list-buffers) ]] || stack_fail "control: OSC 52 did not reach the clipboard"
tm capture-pane -p -t control | grep 'MARKER-BEFORE' >/dev/null && stack_fail "control: CSI 2J did not clear the screen"
tm kill-session -t control
while read -r b; do tm delete-buffer -b "$b"; done < <(tm list-buffers -F '#{buffer_name}')

# 2. snapshot --url on the agent that holds the pushed label.
run_pane snap "$GPULENS snapshot --url $base"
check_pane snap

# 3. A hostile agent through top --url --once and snapshot --url.
run_pane top "$GPULENS top --url http://127.0.0.1:$sport --once"
check_pane top shown
run_pane snap2 "$GPULENS snapshot --url http://127.0.0.1:$sport"
check_pane snap2 shown
tm capture-pane -p -t snap2 | grep -F 'pid 4242: external fragmentation 90% (pool large^[]0;PWNED^G^[]52;c;' >/dev/null ||
  { tm capture-pane -p -t snap2 >&2; stack_fail "snap2: the pushed pool is not shown as text"; }
echo "PASS: title, clipboard and screen untouched by pushed and hostile-agent strings; escapes shown as text"
