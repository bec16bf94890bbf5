#!/usr/bin/env python3
"""Executable documentation: runs the marked blocks of README.md and docs/*.md.

THE CONVENTION (for everyone who writes a README or docs/ block)
---------------------------------------------------------------
Put an HTML comment on the line right before a fenced block; GitHub does not
show it. Unmarked blocks are not run.

  <!-- test -->            before ```sh    every line is a command; each must exit 0
  <!-- test exit=N -->     before ```sh    ... the last command must exit N (the others 0)
  <!-- test background --> before ```sh    one server command (gpulens serve ...); started,
                                           waited for on /healthz, stopped after the file
  <!-- test -->            before ```text  lines "$ CMD" are run (exit 0, or exit=N); every
                                           metric/cause name (snake_case), JSON key ("key":)
                                           and alert name (GPU.../Gpulens...) shown in the
                                           output lines must appear in the real output
  <!-- test -->            before ```yaml  the block is a gpulens config file: check-config
                                           must accept it (exit=2: must reject it)

Commands run with bash in a scratch directory that links the repository's
top-level folders (deploy/, scenarios/, ...), `gpulens` on PATH being the
built binary. Port 9400 in a block is replaced by a free loopback port (so
the documented commands run beside other tests). Comments after `#` are part
of the shell line, as a user would paste it. A block needing a real GPU,
sudo or the network stays unmarked.

Besides the blocks, two inventories are checked:
  * every `--flag` written after `gpulens CMD` in the docs is a flag of CMD;
  * every flag of every command (its --help) appears in the docs.

Usage: docs_test.py GPULENS ROOT
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

GPULENS, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
MARK = re.compile(r"^<!--\s*test(?P<opts>[^>]*?)\s*-->\s*$")
failures = []


def fail(where, msg):
    failures.append(f"{where}: {msg}")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def blocks(path):
    """(line, options, language, body) of every marked fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m or i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            continue
        lang = lines[i + 1][3:].strip()
        body = []
        for j in range(i + 2, len(lines)):
            if lines[j].startswith("```"):
                break
            body.append(lines[j])
        opts = dict(kv.split("=", 1) if "=" in kv else (kv, "1") for kv in m.group("opts").split())
        out.append((i + 2, opts, lang, body))
    return out


def shell(cmd, cwd, env, timeout=120):
    try:
        p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s"


def wait_healthz(port, proc, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


IDENT = re.compile(r"(?<![\w/.-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(])")
JSON_KEY = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)":')
ALERT = re.compile(r"\b((?:GPU|Gpulens)[A-Z][A-Za-z]+)\b")


def expected_tokens(output_lines):
    text = "\n".join(output_lines)
    return set(IDENT.findall(text)) | set(JSON_KEY.findall(text)) | set(ALERT.findall(text))


def run_file(path, scratch, env):
    rel = os.path.relpath(path, ROOT)
    port = free_port()
    servers = []
    sub = lambda s: s.replace("9400", str(port))
    try:
        for line, opts, lang, body in blocks(path):
            where = f"{rel}:{line}"
            want = int(opts.get("exit", "0"))
            if lang == "yaml":
                cfg = os.path.join(scratch, "block.yaml")
                open(cfg, "w").write(sub("\n".join(body)) + "\n")
                rc, out = shell(f"gpulens check-config {cfg}", scratch, env)
                if rc != want:
                    fail(where, f"check-config exited {rc}, want {want}: {out.strip()[:400]}")
                continue
            if lang == "sh" and "background" in opts:
                cmd = sub(" ".join(l for l in body if l.strip() and not l.startswith("#")))
                log = open(os.path.join(scratch, f"server-{line}.log"), "w")
                proc = subprocess.Popen(["bash", "-c", "exec " + cmd], cwd=scratch, env=env, stdout=log,
                                        stderr=subprocess.STDOUT)
                servers.append(proc)
                if not wait_healthz(port, proc):
                    fail(where, f"server did not come up: {open(log.name).read()[-400:]}")
                continue
            if lang == "sh":
                cmds = [sub(l) for l in body if l.strip() and not l.lstrip().startswith("#")]
                for k, cmd in enumerate(cmds):
                    expect = want if k == len(cmds) - 1 else 0
                    rc, out = shell(cmd, scratch, env)
                    if rc != expect:
                        fail(where, f"`{cmd}` exited {rc}, want {expect}: {out.strip()[-400:]}")
                continue
            if lang == "text":
                i = 0
                while i < len(body):
                    if not body[i].startswith("$ "):
                        i += 1
                        continue
                    cmd = sub(body[i][2:])
                    shown = []
                    i += 1
                    while i < len(body) and not body[i].startswith("$ "):
                        shown.append(body[i])
                        i += 1
                    rc, out = shell(cmd, scratch, env)
                    if rc != want:
                        fail(where, f"`{cmd}` exited {rc}, want {want}: {out.strip()[-400:]}")
                    missing = sorted(t for t in expected_tokens(shown) if t not in out)
                    if missing:
                        fail(where, f"`{cmd}`: the docs show {missing}, the output has none of them")
                continue
            fail(where, f"a test marker before a ```{lang} block (only sh, text and yaml run)")
    finally:
        for p in servers:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def help_flags(cmd):
    out = subprocess.run([GPULENS, cmd, "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out)) - {"--help"}


def check_flags(docs):
    listing = subprocess.run([GPULENS, "--help"], capture_output=True, text=True).stdout
    commands = re.findall(r"^  ([a-z][a-z-]+) ", listing, re.M)
    flags = {c: help_flags(c) for c in commands}
    alltext = ""
    for path in docs:
        text = open(path, encoding="utf-8").read()
        alltext += text
        for n, line in enumerate(text.split("\n"), 1):
            for m in re.finditer(r"gpulens ([a-z][a-z-]+)((?: +[^`|#;&]*)?)", line):
                cmd, rest = m.group(1), m.group(2)
                if cmd not in flags:
                    continue
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest):
                    if flag not in flags[cmd] and flag != "--help":
                        fail(f"{os.path.relpath(path, ROOT)}:{n}", f"gpulens {cmd} has no flag {flag}")
    for cmd, fs in flags.items():
        for flag in sorted(fs):
            if flag not in alltext:
                fail("docs", f"flag {flag} of gpulens {cmd} is documented nowhere in README.md or docs/")


def main():
    docs = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    scratch = tempfile.mkdtemp(prefix="gpulens-docs.")
    try:
        for entry in os.listdir(ROOT):
            if entry not in ("build",) and not entry.startswith("."):
                os.symlink(os.path.join(ROOT, entry), os.path.join(scratch, entry))
        bindir = os.path.join(scratch, ".bin")
        os.mkdir(bindir)
        os.symlink(GPULENS, os.path.join(bindir, "gpulens"))
        env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", ""), ROOT=ROOT, NO_COLOR="1")
        count = 0
        for path in docs:
            count += len(blocks(path))
            run_file(path, scratch, env)
        check_flags(docs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"docs: {count} marked blocks ran as documented; every flag documented and real")


main()
