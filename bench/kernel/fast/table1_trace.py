"""One Tang et al. Table I configuration on the kernel (as ``table1.py OUTDIR NAME``) while the BPF
``fast`` program's trace is polled every 0.5 s (bpf_records.trace_read): the inputs of every
Algorithm 2 step (q_sum, q_n, lost, sent → α) and, at each poll, the last periodic update's srtt,
baseRTT (the kernel's tcp_min_rtt the program read) and window. With one FAST flow in the run
(one configuration) the records are that flow's. Diagnostic for the 1b rows (issue 14):

    flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/fast/table1_trace.py OUTDIR NAME [DURATION WARMUP [W]]

W: Algorithm 2's w (s, at the kernel's scale) instead of the scaled paper value. Writes
OUTDIR/NAME.json (the row) and OUTDIR/NAME-trace.json ({"adapt": [...], "update": [...]}, times in
s since the poller started; α, q in s, l, base/srtt in ms, cwnd in packets).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path


def poll(algo, stop: threading.Event, rec: dict) -> None:
    from mpcc.errors import MpccError
    from mpcc.kernel import records as bpf_records

    t0, on, last_adapt = time.time(), False, None
    while not stop.wait(0.5):
        try:
            if not on:
                bpf_records.trace_set(algo, True)
                on = True
            tr = bpf_records.trace_read(algo)
        except MpccError:
            on = False               # not loaded yet (or gone at the end)
            continue
        t = round(time.time() - t0, 2)
        a = tr.get("adapt")
        if a and a["samples"] != last_adapt:
            last_adapt = a["samples"]
            i = a["adapt_in"]
            q = i["q_sum"] / i["q_n"] / 8e6 if i["q_n"] else None
            rec["adapt"].append({"t": t, "alpha_in": i["value"] / 2**32, "q_s": q, "lost": i["lost"],
                                 "sent": i["sent"], "l": i["lost"] / i["sent"] if i["sent"] else None,
                                 "alpha_out": a["dec"] / 2**32})
        u = tr.get("update")
        if u:
            rec["update"].append({"t": t, "srtt_ms": u["rtt"][0] / 8e3, "base_ms": u["base_rtt"][0] / 8e3,
                                  "cwnd": u["cwnd"][0] / 2**32, "alpha": u["adapted"] / 2**32})


def main(out: Path, name: str, duration: float, warmup: float, w: float | None) -> None:
    from mpcc import scenario as scen
    from mpcc.reproduce.common import SCENARIO_DIR
    from mpcc.reproduce.tang2010 import kernel
    from mpcc.reproduce.tang2010.packet import with_adapt_w
    from mpcc.testbed import engine
    os.environ["MPCC_BPF_BUILD"] = "compat-diag"      # the trace is a diagnostic map

    s = kernel.scaled_down(scen.load(SCENARIO_DIR / "tang2010" / f"{name}.toml"))
    if w is not None:
        s = with_adapt_w(s, w)
    algo = next(g.algorithm for g in s.groups if g.algorithm.name == "fast")
    rec: dict = {"adapt": [], "update": []}
    stop = threading.Event()
    th = threading.Thread(target=poll, args=(algo, stop, rec), daemon=True)
    t0, load0 = time.time(), os.getloadavg()[0]
    th.start()
    st = engine.settings_from(s, runs=1, duration_s=duration, warmup_s=warmup)
    try:
        r = engine.run_scenario(s, st, out / "runs" / name)
    finally:
        stop.set()
        th.join()
    row = {**kernel._row(r.groups, r.links), "buffer_pkts": s.links[0].buffer_pkts,
           "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0)), "wall_s": round(time.time() - t0, 1),
           "load_start": round(load0, 2), "load_end": round(os.getloadavg()[0], 2), "duration_s": duration,
           "warmup_s": warmup, "adapt_w": w}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(row, indent=1) + "\n")
    (out / f"{name}-trace.json").write_text(json.dumps(rec) + "\n")
    print(json.dumps(row))


if __name__ == "__main__":
    a = sys.argv[1:]
    main(Path(a[0]), a[1], float(a[2]) if len(a) > 2 else 420.0, float(a[3]) if len(a) > 3 else 168.0,
         float(a[4]) if len(a) > 4 else None)
