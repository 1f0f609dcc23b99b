"""Read the records of bench/kernel/notes/sndbuf_expand_diag.patch (a temporary build that logs,
per MPTCP subflow, every cong_control run (kind 1, at each ACK) and every sndbuf_expand call
(kind 0, from tcp_init_buffer_space and tcp_new_space) with the window, packets out, sk_sndbuf,
the socket flags and the MPTCP socket's queue and buffer): per subflow, the calls and every change
of sk_sndbuf with the window at that moment (bench/kernel/RESULTS.md §26).

    git apply bench/kernel/notes/sndbuf_expand_diag.patch
    export MPCC_BPF_CONN=sndbuf MPCC_SNDDIAG=1   # the patch's sndbuf_expand returns the kernel's 2
    .venv/bin/mpcc kernel load olia              # held across the run, so the map outlives it
    (a testbed run with olia: e.g. conn_mechanisms.scenario_text(6, 30, "olia"), --testbed-seed 4)
    bpftool map dump name mpcc_snd -j > /tmp/sd.json; .venv/bin/mpcc kernel unload olia
    .venv/bin/python bench/kernel/notes/sndbuf_expand_diag.py /tmp/sd.json
    git apply -R bench/kernel/notes/sndbuf_expand_diag.patch
"""
import collections
import json
import sys

recs = [e["formatted"]["value"] for e in json.load(open(sys.argv[1])) if e["formatted"]["value"]["t"]]
recs.sort(key=lambda r: r["t"])
t0 = recs[0]["t"]
by = collections.defaultdict(list)
for r in recs:
    by[r["sk"]].append(r)
for sk, rs in by.items():
    calls = [r for r in rs if r["kind"] == 0]
    print(f"subflow {sk:x}: from {(rs[0]['t'] - t0) / 1e9:.3f} s, {len(rs)} records, {len(calls)} sndbuf_expand calls, "
          f"largest window {max(r['cwnd'] for r in rs)}")
    last = None
    for r in rs:
        if r["sndbuf"] != last:
            per = r["sndbuf"] / (2 * max(r["cwnd"], 10))
            print(f"   {(r['t'] - t0) / 1e9:7.3f} s  sk_sndbuf {r['sndbuf']:8d}  cwnd {r['cwnd']:4d}  "
                  f"sk_sndbuf / (2 · cwnd) {per:7.1f}")
            last = r["sndbuf"]
