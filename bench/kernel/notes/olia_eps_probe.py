#!/usr/bin/env python3
"""Does the kernel's OLIA compute its rule on what it reads, and how often is ε_r non-zero?
(bench/kernel/RESULTS.md §17f, "OLIA per path"). Loads mpcc_olia in the compat-diag build, turns
its trace on, runs SCENARIO on the testbed and polls the last on_ack computation every 100 ms
(n, self, windows, srtt, ℓ, I_r); then recomputes ε_r and I_r from each record's inputs.

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/olia_eps_probe.py SCENARIO OUT.json

Concluded (2026-11-29, seeds 5 and 1 of the generator with OLIA): I_r equals the rule on its
inputs in every record (339); ε_r = 0 in 81 %, > 0 in 12–13 %, < 0 in 6 %.
"""
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
os.environ["MPCC_BPF_BUILD"] = "compat-diag"


def probe(scenario: str, out: str) -> list[dict]:
    from mpcc.kernel import bpf, records
    recs, last = [], None
    with bpf.load("olia", diag=True):
        records.trace_set("olia", True)
        p = subprocess.Popen([str(ROOT / ".venv/bin/mpcc"), "testbed", scenario, "--warmup", "10", "--no-progress",
                              "--json"], stdout=open(out + ".tb.json", "w"), stderr=open(out + ".err", "w"))
        while p.poll() is None:
            r = records.trace_read("olia").get("ack")
            if r and r != last:
                recs.append({"t": time.time(), **r})
                last = r
            time.sleep(0.1)
    json.dump(recs, open(out, "w"))
    return recs


def analyse(recs: list[dict]) -> None:
    count, differ = collections.Counter(), 0
    for r in recs:
        n, s = r["n"], r["self"]
        if n < 2:
            continue
        w = [c / 2**32 for c in r["cwnd"][:n]]
        tau, ell = r["rtt"][:n], r["ell"][:n]
        q = [ell[k] / tau[k] ** 2 for k in range(n)]
        best = {k for k in range(n) if q[k] == max(q)}
        top = {k for k in range(n) if w[k] == max(w)}
        collected = best - top
        eps = 1 / (n * len(collected)) if s in collected else (-1 / (n * len(top)) if s in top and collected else 0.0)
        total = sum(w[k] / tau[k] for k in range(n))
        want = (w[s] / tau[s] ** 2) / total ** 2 + eps / w[s]
        inc = (r["inc"] - 2**64 if r["inc"] >= 2**63 else r["inc"]) / 2**40
        differ += abs(inc - want) > 1e-3 * max(abs(want), 1e-3)
        count["eps > 0" if eps > 0 else "eps < 0" if eps < 0 else "eps = 0"] += 1
    print(dict(count), "records whose I_r differs from the rule on their inputs:", differ)


if __name__ == "__main__":
    analyse(probe(sys.argv[1], sys.argv[2]))
