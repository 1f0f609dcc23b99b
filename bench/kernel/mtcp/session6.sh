#!/bin/bash
# Session-6 kernel runs for issue 14 (Jiang), 2026-11-24, after the end-to-end
#   flock /tmp/mpcc-bench.lock .venv/bin/mpcc reproduce jiang2011 --quick --out results/jiang2011-kernel
# (one hold, 7.5 min) and Fig. 9 for coupled-increase at n = 1..4 × 3 runs (one hold, 4.7 min):
# Fig. 9 for the other three at n = 1..4, then flappiness runs — each its own hold of the shared
# lock (≤ ~7 min), so that other users interleave. What ran (RESULTS.md §14.5–14.6): the first util
# line (04:33–04:38 UTC) and the first flap line (04:45–04:48); the rest was cut at the session's end.
set -u
cd "$(dirname "$0")/../../.."
PY=.venv/bin/python
R=bench/kernel/mtcp/results/jiang
L=/tmp/mpcc-bench.lock
log() { echo "$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg) $*"; }
util() { log "util $*"; flock $L $PY bench/kernel/mtcp/cells.py util "$@"; log "done"; }
flap() { log "flap $*"; flock $L $PY bench/kernel/mtcp/cells.py flap "$@"; log "done"; }
util $R/fig9.jsonl --algos fully-coupled coupled-decrease mstcp --n 1 2 3 4 --buffer 20 --duration 20 --warmup 5
flap $R/flap.jsonl --algos fully-coupled coupled-increase coupled-decrease --n 2 --duration 60 --warmup 10 --runs 1
flap $R/flap.jsonl --algos fully-coupled coupled-increase coupled-decrease --n 2 --duration 60 --warmup 10 --runs 1
util $R/fig9.jsonl --algos fully-coupled coupled-decrease mstcp --n 1 2 3 4 --buffer 20 --duration 20 --warmup 5
log "all done"
