#!/usr/bin/env python3
"""Drives Debian's Firefox ESR over WebDriver BiDi against a running agent.

WebDriver BiDi is the W3C protocol Firefox speaks itself: no driver binary and
no npm package, only Debian's python3-websocket.

  web_firefox_test.py http://127.0.0.1:PORT [diagnose=FILE] [trace=FILE]

The agent runs the thermal-throttle-one-gpu scenario with prefilled history.
Checks what tests/browser/web_test.mjs checks in Chromium that a page must do
in every browser: every GPU shown, the finding on GPU 5 only, the GPU page's
charts and the evidence threshold, no console error, every resource from the
agent; then each offline HTML report given, opened from disk: it renders,
draws its charts (the diagnose report's finding on GPU 5 only) and asks for
nothing. Exits 1 with the reason on the first failed check.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import websocket

BASE = sys.argv[1]
FIREFOX = os.environ.get("FIREFOX", "/usr/bin/firefox-esr")
PORT = int(os.environ.get("BIDI_PORT", "9222"))
profile = tempfile.mkdtemp(prefix="gpulens-ff-")
proc = subprocess.Popen([FIREFOX, "--headless", "--no-remote", "--profile", profile,
                         f"--remote-debugging-port={PORT}", "about:blank"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        env={**os.environ, "MOZ_HEADLESS": "1"}, start_new_session=True)


def stop():
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # Firefox and its content processes
    except ProcessLookupError:
        pass
    proc.wait()
    shutil.rmtree(profile, ignore_errors=True)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    stop()
    sys.exit(1)


signal.signal(signal.SIGALRM, lambda *_: fail("timed out after 90 s"))
signal.alarm(90)

ws = None
for _ in range(100):
    if proc.poll() is not None:
        fail(f"firefox exited {proc.returncode}: {proc.stderr.read()[-400:]!r}")
    try:
        # No Origin header: Firefox refuses WebSocket clients that send one.
        ws = websocket.create_connection(f"ws://127.0.0.1:{PORT}/session", timeout=30, suppress_origin=True)
        break
    except (OSError, websocket.WebSocketException):
        time.sleep(0.3)
if ws is None:
    fail(f"no WebDriver BiDi endpoint on port {PORT}")

errors = []
next_id = 0


def send(method, params):
    global next_id
    next_id += 1
    ws.send(json.dumps({"id": next_id, "method": method, "params": params}))
    while True:
        msg = json.loads(ws.recv())
        if msg.get("method") == "log.entryAdded":
            if msg["params"].get("level") == "error":
                errors.append(msg["params"].get("text", ""))
            continue
        if msg.get("id") == next_id:
            if msg.get("type") == "error":
                fail(f"{method}: {msg.get('error')}: {msg.get('message')}")
            return msg["result"]


def evaluate(expression):
    r = send("script.evaluate", {"expression": expression, "target": {"context": context}, "awaitPromise": True})
    if r["type"] == "exception":
        fail(f"script {expression}: {r['exceptionDetails']['text']}")
    return r["result"].get("value")


def wait_for(expression, what):
    for _ in range(50):
        if evaluate(expression):
            return
        time.sleep(0.2)
    fail("timed out waiting for " + what)


session = send("session.new", {"capabilities": {}})
send("session.subscribe", {"events": ["log.entryAdded"]})
context = send("browsingContext.getTree", {})["contexts"][0]["context"]
version = f"{session['capabilities']['browserName']} {session['capabilities']['browserVersion']}"

send("browsingContext.navigate", {"context": context, "url": BASE + "/", "wait": "complete"})
wait_for('document.querySelectorAll("#gpus .card").length === 8', "8 GPU cards")
cards = evaluate('[...document.querySelectorAll("#gpus .card")].map((e) => e.dataset.gpu).join(",")')
if cards != "0,1,2,3,4,5,6,7":
    fail("overview shows GPUs " + cards)
flagged = evaluate('[...document.querySelectorAll("#gpus .card")]'
                   '.filter((e) => e.querySelector(\'[data-cause="thermal_throttle"]\')).map((e) => e.dataset.gpu).join(",")')
if flagged != "5":
    fail(f"thermal_throttle shown on GPUs [{flagged}], expected 5 only")
sparks = evaluate('document.querySelectorAll("#gpus .card polyline").length')
if sparks < 8:
    fail(f"only {sparks} sparklines drawn")

evaluate('document.querySelector(\'#gpus .card[data-gpu="5"]\').click()')
wait_for('document.querySelectorAll("#layers .chart canvas").length >= 4', "the GPU page's charts")
layers = evaluate('[...document.querySelectorAll("#layers .chart")]'
                  '.filter((e) => e.querySelector("canvas")).map((e) => e.dataset.layer).join(",")')
if layers != "compute,memory,io,health":
    fail("GPU page charts: " + layers)
wait_for('!!document.querySelector(\'#evidence .chart[data-signal="temperature"] canvas\')',
         "the temperature evidence chart")
threshold = evaluate('document.querySelector(\'#evidence .chart[data-signal="temperature"]\').dataset.threshold')
if threshold != "80":
    fail(f"the evidence chart's threshold is {threshold}")

origin = "/".join(BASE.split("/")[:3])
foreign = evaluate('performance.getEntriesByType("resource").map((e) => e.name)'
                   f'.filter((u) => !u.startsWith({json.dumps(origin)}) && !u.startsWith("data:")).join(" ")')
if foreign:
    fail("resources from other hosts: " + foreign)
time.sleep(0.3)
send("session.status", {})  # drains console messages that arrived meanwhile
if errors:
    fail("console errors: " + " | ".join(errors))
print(f"web page ({version}): 8 GPUs, thermal_throttle on GPU 5 only, charts, threshold, "
      "no console errors, no foreign resource")

for arg in sys.argv[2:]:
    kind, path = arg.split("=", 1)
    send("browsingContext.navigate", {"context": context, "url": "file://" + path, "wait": "complete"})
    wait_for(f"document.body.dataset.rendered === {json.dumps(kind)}", f"the {kind} report to render")
    charts = evaluate('document.querySelectorAll("canvas").length')
    if charts < 1:
        fail(f"the {kind} report draws no chart")
    if kind == "diagnose":
        gpus = evaluate('[...document.querySelectorAll(\'.finding[data-cause="thermal_throttle"]\')]'
                        '.map((e) => e.closest(".gpu").dataset.gpu).join(",")')
        if gpus != "5":
            fail(f"diagnose report: thermal_throttle on GPUs [{gpus}], expected 5 only")
    fetched = evaluate('performance.getEntriesByType("resource").map((e) => e.name)'
                       '.filter((u) => !u.startsWith("data:") && !u.startsWith("blob:")).join(" ")')
    if fetched:
        fail(f"the {kind} report requested {fetched}")
    time.sleep(0.3)
    send("session.status", {})
    if errors:
        fail(f"console errors in the {kind} report: " + " | ".join(errors))
    print(f"{kind} report: rendered, {charts} charts, nothing requested")

stop()
print("PASS")
