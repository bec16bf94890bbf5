#!/usr/bin/env bash
# The doc-test runner itself (docs_test.py): an exact block that matches,
# placeholders and "..." included, passes; a drifted one fails with a diff
# naming the file, the line and the changed output; a broken link fails.
set -euo pipefail
GPULENS=$1
RUNNER=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpulens-docs-runner.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir "$dir/docs"
cat > "$dir/docs/good.md" <<'MD'
# Good

<!-- test exact -->
```text
$ printf 'at 2026-12-02 06:38:11 UTC\nGPU-0b8f2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4 used 1,159 series\nnoise 1\nnoise 2\nwidth %s\nend\n' "$COLUMNS"
at {{TIME}}
{{UUID}} used {{NUM}} series
...
width 160
end
$ gpulens snapshot --source sim --scenario no-such-scenario 2>&1 | head -c 0
```

See [the other page](other.md#a-heading) and [this one](#good).
MD
cat > "$dir/docs/other.md" <<'MD'
# Other

## A heading
MD
cat > "$dir/docs/drifted.md" <<'MD'
# Drifted

<!-- test exact -->
```text
$ printf 'host node-7\nGPU 0 used 31 MiB\nGPU 1 used 40 MiB\n'
host node-7
GPU 0 used {{NUM}} MiB
GPU 1 used 23 MiB
```
MD
cat > "$dir/docs/badlink.md" <<'MD'
# Bad link

[gone](other.md#no-such-heading) and [missing](missing.md).
MD

python3 "$RUNNER" "$GPULENS" "$dir" "$dir/docs/good.md" > "$dir/good.out" 2>&1 ||
  { cat "$dir/good.out" >&2; fail "a matching exact block failed"; }

if python3 "$RUNNER" "$GPULENS" "$dir" "$dir/docs/drifted.md" > "$dir/drift.out" 2>&1; then
  fail "a drifted exact block passed"
fi
grep -q '^docs/drifted.md:4: `printf' "$dir/drift.out" || { cat "$dir/drift.out" >&2; fail "the failure names no file:line"; }
grep -qx -- '-GPU 1 used 23 MiB' "$dir/drift.out" || { cat "$dir/drift.out" >&2; fail "the diff lacks the documented line"; }
grep -qx -- '+GPU 1 used 40 MiB' "$dir/drift.out" || { cat "$dir/drift.out" >&2; fail "the diff lacks the actual line"; }
grep -q -- '^-GPU 0' "$dir/drift.out" && fail "a line that matched its placeholder shows as a difference"

if python3 "$RUNNER" "$GPULENS" "$dir" "$dir/docs/badlink.md" > "$dir/link.out" 2>&1; then
  fail "a broken link passed"
fi
grep -q 'other.md#no-such-heading: docs/other.md has no heading #no-such-heading' "$dir/link.out" || { cat "$dir/link.out" >&2; fail "the missing anchor is not named"; }
grep -q 'missing.md: no such file' "$dir/link.out" || { cat "$dir/link.out" >&2; fail "the missing file is not named"; }
echo "doc-test runner: exact blocks match, drift fails with a diff, broken links fail"
