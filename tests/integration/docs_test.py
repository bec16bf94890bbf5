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
  <!-- test exact -->      before ```text  the same, and the shown lines are the output, line by
                                           line (trailing blanks ignored), except placeholders for
                                           what legitimately varies:
                                             {{TIME}}  a date-time, a date or a time of day
                                             {{UUID}}  a UUID (GPU-... or MIG-... too)
                                             {{NUM}}   a number that is measured (1,159  31.5  -2)
                                             {{ANY}}   any text within the line
                                             ...       (a line of its own) any number of lines
                                           spaces right before a placeholder stretch or shrink
                                           with it. A drift fails with a diff.
  <!-- test -->            before ```yaml  the block is a gpulens config file: check-config
                                           must accept it (exit=2: must reject it)

An output that cannot be made exact (a real GPU, a time series) says in the
text that it is illustrative.

Commands run with bash in a scratch directory that links the repository's
top-level folders (deploy/, scenarios/, ...), `gpulens` on PATH being the
built binary. Port 9400 in a block is replaced by a free loopback port (so
the documented commands run beside other tests). Comments after `#` are part
of the shell line, as a user would paste it. A block needing a real GPU,
sudo or the network stays unmarked.

The environment is fixed: COLUMNS=160 (a block may set its own), LINES=50,
TZ=UTC, LC_ALL=C.UTF-8, NO_COLOR=1.

Besides the blocks, three inventories are checked:
  * every relative link of README.md and docs/*.md names a file that exists,
    and its #anchor a heading (or <a id>) of that file;
  * every `--flag` written after `gpulens CMD` in the docs is a flag of CMD;
  * every flag of every command (its --help) appears in the docs.

Usage: docs_test.py GPULENS ROOT [FILE.md ...]
  with FILEs: run only their blocks and links (no flag inventory).
"""
import difflib
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


PLACEHOLDERS = {
    "TIME": r"(?:\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d| UTC)?)?"
            r"|\d\d:\d\d(?::\d\d)?)",
    "UUID": r"(?:(?:GPU|MIG)-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "NUM": r"-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?",
    "ANY": r".*?",
}
HOLE = re.compile(r"( *)\{\{(" + "|".join(PLACEHOLDERS) + r")\}\}")


def line_pattern(shown):
    """The regular expression one documented line stands for."""
    out, pos = "", 0
    for m in HOLE.finditer(shown):
        out += re.escape(shown[pos:m.start()])
        out += (" *" if m.group(1) else "") + PLACEHOLDERS[m.group(2)]
        pos = m.end()
    return re.compile(out + re.escape(shown[pos:]) + r"\Z")


def exact_match(shown, actual):
    """True when the actual lines are the documented ones (placeholders, ...)."""
    pats = [None if s.strip() == "..." else line_pattern(s.rstrip()) for s in shown]
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[i, j]
        if i == len(pats):
            r = j == len(actual)
        elif pats[i] is None:
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and bool(pats[i].match(actual[j])) and go(i + 1, j + 1)
        memo[i, j] = r
        return r
    return go(0, 0)


def exact_diff(shown, actual):
    """A unified diff in which the lines that did match show as the output's."""
    rendered, j, skipping = [], 0, False
    for s in shown:
        if s.strip() == "...":
            skipping = True
            continue
        pat = line_pattern(s.rstrip())
        hit = next((k for k in range(j, len(actual)) if pat.match(actual[k])), None)
        if hit is None or (not skipping and hit > j + 3):
            rendered.append(s.rstrip())
            continue
        if skipping:
            rendered.extend(actual[j:hit])
        rendered.append(actual[hit])
        j, skipping = hit + 1, False
    if skipping:
        rendered.extend(actual[j:])
    return "\n".join(difflib.unified_diff(rendered, actual, "documented", "actual", lineterm=""))


def output_lines(text):
    lines = [l.rstrip() for l in text.split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


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
                    if "exact" in opts:
                        while shown and shown[-1].strip() == "":
                            shown.pop()
                        got = output_lines(out)
                        if not exact_match(shown, got):
                            fail(where, f"`{cmd}`: the output drifted from the docs:\n{exact_diff(shown, got)}")
                        continue
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


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path):
    """The #anchors a Markdown file has: GitHub's heading slugs and <a id>."""
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        out.update(re.findall(r'<a (?:id|name)="([^"]+)"', line))
        m = re.match(r"^#+ (.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def check_links(docs):
    for path in docs:
        text, fence = open(path, encoding="utf-8").read(), False
        for n, line in enumerate(text.split("\n"), 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):
                    continue
                name, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
                where = f"{os.path.relpath(path, ROOT)}:{n}"
                if not os.path.exists(dest):
                    fail(where, f"link to {target}: no such file")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    fail(where, f"link to {target}: {os.path.relpath(dest, ROOT)} has no heading #{anchor}")


def main():
    only = [os.path.abspath(f) for f in sys.argv[3:]]
    docs = only or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    scratch = tempfile.mkdtemp(prefix="gpulens-docs.")
    try:
        for entry in os.listdir(ROOT):
            if entry not in ("build",) and not entry.startswith("."):
                os.symlink(os.path.join(ROOT, entry), os.path.join(scratch, entry))
        bindir = os.path.join(scratch, ".bin")
        os.mkdir(bindir)
        os.symlink(GPULENS, os.path.join(bindir, "gpulens"))
        env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", ""), ROOT=ROOT, NO_COLOR="1",
                   COLUMNS="160", LINES="50", TZ="UTC", LC_ALL="C.UTF-8")
        count = 0
        for path in docs:
            count += len(blocks(path))
            run_file(path, scratch, env)
        check_links(docs)
        if not only:
            check_flags(docs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"docs: {count} marked blocks ran as documented; every link resolves"
          + ("" if only else "; every flag documented and real"))


main()
