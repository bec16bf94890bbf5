#!/usr/bin/env python3
"""A stand-in remote_write receiver on 127.0.0.1 for the signal tests.

  fake_receiver.py PORT ok LOG     answers 204 to every POST; appends one line
                                   "POST <path> <bytes>" per request to LOG
  fake_receiver.py PORT hang LOG   accepts, reads, never answers; appends
                                   "CONNECT" per connection to LOG

It decodes nothing: what the agent sends is checked against real receivers
in remote_write_test.sh; here only whether and when it sends.
"""
import http.server
import socket
import sys
import threading

port, mode, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def note(line):
    with open(log, "a") as f:
        f.write(line + "\n")


class Ok(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        note(f"POST {self.path} {n}")
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


if mode == "ok":
    http.server.ThreadingHTTPServer(("127.0.0.1", port), Ok).serve_forever()
elif mode == "hang":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)  # never answered, never closed
        note("CONNECT")
        threading.Thread(target=lambda c=c: [None for _ in iter(lambda: c.recv(65536), b"")], daemon=True).start()
else:
    sys.exit(f"unknown mode {mode}")
