#!/bin/sh
# FAST TCP equilibrium on the kernel (issue 14). Root; takes the shared bench lock.
#   sudo bench/kernel/fast/run.sh OUTDIR      → OUTDIR/{one-flow,two-flows}/result.json
# then: .venv/bin/python bench/kernel/fast/check.py OUTDIR
set -e
cd "$(dirname "$0")/../../.."
out=${1:-build/fast-bench}
mkdir -p "$out"
exec flock -w 2400 /tmp/mpcc-bench.lock sh -c "
  .venv/bin/mpcc testbed bench/kernel/fast/one-flow.toml --json --no-progress --warmup 5 --out $out/one-flow > $out/one-flow.json &&
  .venv/bin/mpcc testbed bench/kernel/fast/two-flows.toml --json --no-progress --warmup 10 --out $out/two-flows > $out/two-flows.json"
