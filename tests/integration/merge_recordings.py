#!/usr/bin/env python3
"""Joins OpenMetrics recordings of several hosts into one, as a fleet's
Prometheus would hold them: every sample of a file gets hostname="<name>".
Families stay contiguous (metadata once, then each file's samples).
  merge_recordings.py OUT NAME=FILE [NAME=FILE ...]"""
import sys

out_path, inputs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
order, meta, samples = [], {}, {}
for host, path in inputs:
    family = ""
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line == "# EOF":
            continue
        if line.startswith("#"):
            family = line.split()[2] if len(line.split()) > 2 else ""
            if family not in meta:
                meta[family], samples[family] = [], []
                order.append(family)
            if not samples[family] and line not in meta[family]:
                meta[family].append(line)
            continue
        if family not in samples:
            meta[family], samples[family] = [], []
            order.append(family)
        name, brace = line.split(" ", 1)[0], line.find("{")
        label = f'hostname="{host}"'
        if brace != -1 and brace < len(name):
            rest = line[brace + 1:]
            line = line[:brace + 1] + label + ("" if rest.startswith("}") else ",") + rest
        else:
            line = name + "{" + label + "}" + line[len(name):]
        samples[family].append(line)
with open(out_path, "w", encoding="utf-8") as out:
    for f in order:
        out.write("".join(m + "\n" for m in meta[f]) + "".join(s + "\n" for s in samples[f]))
    out.write("# EOF\n")
