"""Queue (and, where kept, window) statistics of bench/kernel/fast/long-rtt.toml runs over the
steady state, 10–40 s of the time series; one line per run directory (the testbed's --out):

    flock /tmp/mpcc-bench.lock .venv/bin/mpcc testbed bench/kernel/fast/long-rtt.toml --json \\
        --no-progress --warmup 10 --sample-ms 10 --out OUT/NAME
    .venv/bin/python bench/kernel/fast/long_rtt_queue.py OUT/NAME...
"""

from __future__ import annotations

import json
import statistics as st
import sys
from pathlib import Path

import pyarrow.parquet as pq


def line(run: Path) -> str:
    res = json.loads((run / "result.json").read_text())
    link = res["links"]["l1"]
    lk = pq.read_table(run / "links.parquet").to_pydict()
    q = [v for t, v in zip(lk["time_s"], lk["queue_pkts"]) if 10 <= t < 40]
    out = (f"{run.name}: queue {st.mean(q):.1f} ± {st.pstdev(q):.1f} pkts (min {min(q)}, max {max(q)}, "
           f"{len(q)} samples); utilisation {link['utilisation']:.4f}, drops {link['drops']}, "
           f"rate {res['groups']['fast20']['rate_mbps']:.2f} Mb/s")
    if (run / "subflows.parquet").exists():
        sf = pq.read_table(run / "subflows.parquet").to_pydict()
        w = [v for t, v in zip(sf["time_s"], sf["cwnd_pkts"]) if 10 <= t < 40]
        out += f"; cwnd {st.mean(w):.1f} ± {st.pstdev(w):.1f} (min {min(w)}, max {max(w)})"
    return out


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(line(Path(arg)))
