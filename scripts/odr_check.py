#!/usr/bin/env python3
"""One-definition-rule check: class, struct and union names of the gpulens
namespaces (outside anonymous namespaces) that the debug info of the given
binaries or objects defines in more than one file or with more than one size.

    scripts/odr_check.py build/release/gpulens

Two classes of one name linked into one binary (as the client's and the
listener's TlsContext once were) share their inline and out-of-line members:
the linker keeps one definition for both. Exits 1 and lists each name found
so, 0 when none. Needs llvm-dwarfdump and a build with debug info (the
release preset's RelWithDebInfo).
"""
import collections
import re
import shutil
import subprocess
import sys

TYPES = ("DW_TAG_structure_type", "DW_TAG_class_type", "DW_TAG_union_type")
SCOPES = ("DW_TAG_compile_unit", "DW_TAG_namespace") + TYPES


def scan(files):
    """{qualified name: {(byte size, declaring file under src/)}}."""
    dump = subprocess.Popen(["llvm-dwarfdump", "--debug-info", *files], stdout=subprocess.PIPE, text=True,
                            errors="replace")
    tag_re = re.compile(r"^0x[0-9a-f]+:(\s+)(DW_TAG_\w+)")
    attr_re = re.compile(r"^\s+(DW_AT_\w+)\s+\((.*)\)$")
    stack = []  # [indent, tag, name] of the enclosing entries
    defs = collections.defaultdict(set)
    attrs = None

    def close():
        if attrs is None:
            return
        stack[-1][2] = attrs.get("DW_AT_name")
        indent, tag, name = stack[-1]
        if tag not in TYPES or not name or "DW_AT_declaration" in attrs or "DW_AT_byte_size" not in attrs:
            return
        scopes = stack[:-1]
        if any(t not in SCOPES for _, t, _ in scopes):
            return  # local to a function
        names = [n for _, t, n in scopes if t != "DW_TAG_compile_unit"]
        if None in names or not names or names[0] != "gpulens":
            return  # an anonymous namespace, or not ours
        where = re.sub(r'^.*?/src/', "src/", attrs.get("DW_AT_decl_file", "?"))
        defs["::".join(names + [name])].add((int(attrs["DW_AT_byte_size"], 0), where))

    for line in dump.stdout:
        m = tag_re.match(line)
        if m:
            close()
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append([indent, m.group(2), None])
            attrs = {}
            continue
        m = attr_re.match(line)
        if m and attrs is not None:
            attrs[m.group(1)] = m.group(2).strip('"')
    close()
    if dump.wait() != 0:
        sys.exit("llvm-dwarfdump failed")
    return defs


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if shutil.which("llvm-dwarfdump") is None:
        sys.exit("odr_check: llvm-dwarfdump not found (Debian: llvm)")
    defs = scan(sys.argv[1:])
    bad = {q: v for q, v in defs.items() if len({s for s, _ in v}) > 1 or len({f for _, f in v}) > 1}
    for q, v in sorted(bad.items()):
        print(q + ": " + ", ".join(f"{f} ({s} bytes)" for s, f in sorted(v, key=lambda x: x[1])))
    print(f"{len(defs)} gpulens types, {len(bad)} defined more than one way", file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
