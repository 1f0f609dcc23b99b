#!/usr/bin/env python3
"""Per-DSN trace of a multipath group's connections on the testbed: which subflow carried which
connection-level bytes, when the data ACK passed them, and what ended each stall of a subflow
(bench/kernel/RESULTS.md §36).

    sudo flock /tmp/mpcc-bench.lock .venv/bin/python bench/kernel/notes/dsn_trace.py run \\
        --seed 9 --algorithm olia --testbed-seed 51 --secs 40 --out /tmp/dsn9
    .venv/bin/python bench/kernel/notes/dsn_trace.py report /tmp/dsn9 [--path 1] [--gap 0.1]
    ... dsn_trace.py run ... --wake --out /tmp/wake9; dsn_trace.py wakes /tmp/wake9   (RESULTS.md §37)

``run`` runs the generator's network ``--seed`` (bench/kernel/sim_vs_testbed.py) once, with a
headers-only capture (mpcc.lab.pcap) on the multipath group's host interface ``host<g>``, which
every subflow of the group leaves and enters by. ``report`` reads the capture:

* a connection's subflows are told apart by their client address (route j sends from
  198.18.g.(j+1)) and joined into connections by their DSNs (a connection's IDSN is random, so
  the subflows whose mappings lie within 2^24 of each other belong to one connection);
* each outgoing data segment's connection-level bytes follow from its subflow sequence number
  and the DSS mapping that covers it (RFC 8684 §3.3.1), kept per subflow; a segment whose
  subflow bytes were sent before is a subflow retransmission, connection-level bytes sent before
  on another subflow are a reinjection;
* a stall of path ``--path``: a gap of more than ``--gap`` s between two of its data segments
  while the connection was sending (within the measured time). For each: the data ACK at its
  start, the subflow that holds the byte the data ACK waits for, that subflow's block (the run of
  consecutive connection-level bytes the scheduler gave it) and when it was sent and acknowledged,
  and how far the data ACK had moved when the stalled path sent again.

``run --ss`` also samples the MPTCP sockets' memory every ~20 ms (``ss -M -m``: w =
sk_wmem_queued, tb = sk_sndbuf) into ss.txt, each sample headed by its CLOCK_REALTIME time.

``run --wake`` also records, with ftrace (no BPF, no kprobes: tracepoints and a stacktrace
trigger, in an instance of its own, on CLOCK_MONOTONIC), every wake-up of a Python task with the
waker's kernel stack (``sched_waking``, in the waker's context), the writers' ``sendto`` calls
and returns, and every connection-level ACK update (``mptcp:ack_update_msk``), into wake.trace;
``wakes`` tells which kernel path woke the writers while they were blocked in ``sendto``
(``sk_stream_wait_memory``).

The pcap times are CLOCK_REALTIME; ``run`` records the offset to CLOCK_MONOTONIC (connect.json's
t0) in meta.json.
"""
from __future__ import annotations

import argparse
import bisect
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "python"))
sys.path.insert(0, str(HERE.parent))

M32 = 1 << 32


def run(a) -> None:
    from conn_mechanisms import scenario_text
    from mpcc import scenario
    from mpcc.testbed import engine as tb
    s = scenario.loads(scenario_text(a.seed, a.secs, a.algorithm), "generated.toml")
    gi = next(i for i, g in enumerate(s.groups) if g.name == "mp")
    a.out.mkdir(parents=True, exist_ok=True)
    cap: list[subprocess.Popen] = []

    def on_built(topo):
        cap.append(subprocess.Popen(["ip", "netns", "exec", topo.hosts[gi], sys.executable, "-m", "mpcc.lab.pcap",
                                     f"host{gi}", str(a.secs + 8), str(a.out / "host.pcap"), "96", str(256 << 20)],
                                    stdout=subprocess.PIPE, text=True,
                                    env={"PYTHONPATH": str(HERE.parents[2] / "python"), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}))
        if a.ss:   # the MPTCP sockets' memory (ss -M -m: w = sk_wmem_queued, tb = sk_sndbuf) every ~20 ms
            cap.append(subprocess.Popen(["ip", "netns", "exec", topo.hosts[gi], "sh", "-c",
                                         f"end=$(($(date +%s) + {int(a.secs) + 8})); while [ $(date +%s) -lt $end ]; do "
                                         "echo T $(cat /proc/uptime | cut -d' ' -f1) $(date +%s.%N); ss -HMm; sleep 0.01; done"],
                                        stdout=open(a.out / "ss.txt", "w"), stderr=subprocess.DEVNULL))
        # pcap.py binds its socket, then writes the file's header: wait for it before the first SYN
        end = time.monotonic() + 10
        while time.monotonic() < end and not ((a.out / "host.pcap").exists() and (a.out / "host.pcap").stat().st_size >= 24):
            time.sleep(0.02)

    inst = ftrace_start() if a.wake else None
    try:
        res, sums = tb.run_detailed(s, tb.settings_from(s, warmup_s=a.warmup, seed=a.testbed_seed), a.out / "tb",
                                    progress=False, on_built=on_built)
    finally:
        if inst is not None:
            ftrace_stop(inst, a.out / "wake.trace")
    capres = json.loads(cap[0].communicate(timeout=60)[0] or "{}") if cap else {}
    for c in cap[1:]:
        c.wait(timeout=60)
    # an unsound run is run again (run0-again1, …; testbed.health.healthy_run): the kept one is the
    # last, and so is the capture (on_built starts one per attempt, into the same file)
    kept = max((a.out / "tb").glob("run0*"), key=lambda d: (len(d.name), d.name))
    t0 = json.loads((kept / "connect.json").read_text())["t0"]
    meta = {"seed": a.seed, "algorithm": a.algorithm, "testbed_seed": a.testbed_seed, "secs": a.secs,
            "warmup": a.warmup, "group": gi, "t0_monotonic": t0, "realtime_minus_monotonic": time.time() - time.monotonic(),
            "attempt": kept.name, "capture": capres, "sound": sums[0].health.get("sound"),
            "rate_mbps": res.groups["mp"].rate_mbps, "paths_mbps": res.groups["mp"].path_rate_mbps,
            "utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    (a.out / "meta.json").write_text(json.dumps(meta, indent=1))
    print(json.dumps(meta))


TRACEFS = Path("/sys/kernel/tracing")
PY = 'comm ~ "py*"'    # the traffic process's threads (and the engine's): python3, python3.11, ...
#: the instance's events, and whether each is filtered to Python tasks (PY)
EVENTS = {"sched/sched_waking": True, "syscalls/sys_enter_sendto": True, "syscalls/sys_exit_sendto": True,
          "tcp/tcp_sendmsg_locked": True,      # plain TCP writers (MPTCP's sendmsg does not call it)
          "mptcp/ack_update_msk": False}


def ftrace_start() -> Path:
    """An ftrace instance of its own: Python tasks' wake-ups with the waker's stack, the writers'
    sendto (entry: fd, len; exit: bytes copied or -errno), plain TCP sockets' sendmsg (to tell
    the Reno flows' writers apart), connection-level ACK updates."""
    if not (TRACEFS / "instances").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    inst = TRACEFS / "instances" / "mpcc_wake"
    if inst.exists():
        ftrace_stop(inst, None)
    inst.mkdir()
    (inst / "trace_clock").write_text("mono")
    (inst / "buffer_size_kb").write_text(str(128 << 10))
    ev = inst / "events"
    for e, filtered in EVENTS.items():
        if filtered:
            (ev / e / "filter").write_text(PY)
        (ev / e / "enable").write_text("1")
    (ev / "sched/sched_waking/trigger").write_text(f"stacktrace if {PY}")
    (inst / "tracing_on").write_text("1")
    return inst


def ftrace_stop(inst: Path, out: Path | None) -> None:
    """Stop, save the buffer to ``out``, and remove the instance (triggers first: an instance
    with a trigger cannot be removed)."""
    (inst / "tracing_on").write_text("0")
    if out is not None:
        with open(inst / "trace") as f, open(out, "w") as g:
            shutil.copyfileobj(f, g)
    (inst / "events/sched/sched_waking/trigger").write_text(f"!stacktrace if {PY}")
    for e in EVENTS:
        (inst / "events" / e / "enable").write_text("0")
    inst.rmdir()


WAKERS = (   # the first of these in the waker's stack names the wake-up (innermost first)
    ("sk_stream_write_space", "sk_stream_write_space"),      # free >= queued / 2 (net/core/stream.c)
    ("call_timer_fn", "send timeout"),     # SO_SNDTIMEO: schedule_timeout's timer (process_timeout, a tail call)
    ("__subflow_state_change", "subflow state change"),
    ("sock_def_readable", "data ready"),
    ("sock_def_error_report", "error report"),
    ("__release_sock", "socket lock"),
    ("release_sock", "socket lock"),
)


def parse_trace(path: Path):
    """wake.trace → (writers, events): a writer is a task that called sendto with 64 KB (the
    testbed's writer, traffic.send) and never tcp_sendmsg_locked (a plain TCP socket's); events
    are (t, kind, tid, data) in time order, kind one of enter, exit (data: the return value),
    wake (data: the waker's stack, innermost first) and ack (tid 0; data: (old snd_una, new
    snd_una))."""
    import re
    hdr = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (.*)$")
    writers: set[int] = set()
    tcp_writers: set[int] = set()
    events: list[list] = []
    last_wake: dict[int, list] = {}      # per CPU: the wake-up the next <stack trace> belongs to
    stack: list[str] | None = None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            if line.startswith(" => "):
                if stack is not None:
                    stack.append(line[4:].split("+")[0].strip())
                continue
            m = hdr.match(line)
            stack = None
            if not m:
                continue
            _comm, pid, cpu, t, body = m.groups()
            t, pid, cpu = float(t), int(pid), int(cpu)
            if body.startswith("<stack trace>"):
                w = last_wake.pop(cpu, None)
                stack = w[3] if w is not None else None
            elif body.startswith("sched_waking:"):
                w = [t, "wake", int(re.search(r" pid=(\d+)", body).group(1)), []]
                events.append(w)
                last_wake[cpu] = w
            elif body.startswith("sys_sendto("):
                ln = re.search(r"len: (0x[0-9a-f]+|\d+)", body)     # hex from 10 up
                if ln and int(ln.group(1), 0) == 65536:
                    writers.add(pid)
                    events.append([t, "enter", pid, None])
            elif body.startswith("sys_sendto -> "):
                events.append([t, "exit", pid, int(body.split("->")[1].strip(), 16)])
            elif body.startswith("tcp_sendmsg_locked:"):
                tcp_writers.add(pid)
            elif body.startswith("ack_update_msk:"):
                o = int(re.search(r"old_snd_una=(\d+)", body).group(1))
                n = int(re.search(r"new_snd_una=(\d+)", body).group(1))
                events.append([t, "ack", 0, (o, n)])
    events.sort(key=lambda e: e[0])
    return writers - tcp_writers, events


def waker(stack: list[str]) -> str:
    if not stack:
        return "no stack recorded"     # the trigger's stack is missing for <1 % of events
    for fn, name in WAKERS:
        if fn in stack:
            return name
    skip = ("__traceiter", "trace_", "ttwu", "try_to_wake", "__wake_up", "wake_up", "woken_wake", "autoremove")
    return "other: " + " < ".join(f for f in stack if not f.startswith(skip))[:160]


def wakes(a) -> None:
    """Which kernel path woke the writers while they were blocked in sendto, and the callers of
    sk_stream_write_space; per kind: how many, how long into the sendto, and how many came
    within 1 ms after a connection-level ACK advance (any connection's); how sendto returned
    (64 KB copied, part of it at the timeout, or -EAGAIN: nothing); the size of the data-ACK
    advance that preceded each sk_stream_write_space wake-up."""
    writers, events = parse_trace(a.dir / "wake.trace")
    meta = json.loads((a.dir / "meta.json").read_text()) if (a.dir / "meta.json").exists() else {}
    t_lo = meta.get("t0_monotonic", -1e18) + meta.get("warmup", 0.0)
    in_send: dict[int, float] = {}
    last_ack, last_adv = -1e18, 0
    adv_before: list[int] = []      # the data-ACK advance just before each sk_stream_write_space wake-up
    kinds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    woke: list[tuple[float, str]] = []     # every writer wake-up inside sendto, and its kind
    callers: dict[str, int] = defaultdict(int)
    sends, returns = 0, defaultdict(int)
    for t, kind, tid, data in events:
        if kind == "ack":
            if data[1] != data[0]:
                last_ack, last_adv = t, (data[1] - data[0]) % (1 << 64)
        elif tid not in writers:
            continue
        elif kind == "enter":
            in_send[tid] = t
        elif kind == "exit":
            t_in = in_send.pop(tid, None)
            if t_in is not None and t >= t_lo:
                sends += 1
                returns["64 KB" if data == 65536 else "error" if data >= 1 << 63 else "part"] += 1
        elif kind == "wake" and tid in in_send and t >= t_lo:
            k = waker(data)
            kinds[k].append((t - in_send[tid], t - last_ack))
            woke.append((t, k))
            if k == "sk_stream_write_space":
                if t - last_ack < 1e-3:
                    adv_before.append(last_adv)
                i = data.index("sk_stream_write_space")
                callers[" < ".join(data[i + 1:i + 6])] += 1
    out = {"dir": str(a.dir), "writers": len(writers), "sendto": sends, "returns": dict(returns), "wakers": {}}
    for k, v in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        out["wakers"][k] = {"n": len(v), "in_sendto_median_s": round(statistics.median(x for x, _ in v), 4),
                            "within_1ms_of_ack_advance": sum(1 for _, d in v if 0 <= d < 1e-3)}
    if adv_before:
        out["sk_stream_write_space_after_data_ack_advance_kb"] = {
            "median": round(statistics.median(adv_before) / 1024, 1), "min": round(min(adv_before) / 1024, 1),
            "max": round(max(adv_before) / 1024, 1)}
    out["sk_stream_write_space_callers"] = dict(sorted(callers.items(), key=lambda kv: -kv[1])[:8])
    if meta and (a.dir / "host.pcap").exists():
        # the stalls of route --path (as `report`): did a writer wake-up just precede each resume?
        off, t_hi = meta["realtime_minus_monotonic"], meta["t0_monotonic"] + meta["secs"]
        subs, acks = load(a.dir / "host.pcap", meta["group"])
        ends = []
        for c in connections(subs, acks):
            sf = c["subs"].get(a.path)
            tx = [x[0] - off for x in (sf.tx if sf else []) if t_lo <= x[0] - off <= t_hi]
            ends += [t2 for t1, t2 in zip(tx, tx[1:]) if t2 - t1 > a.gap]

        wt = [w for w, _ in woke]

        def last(x: float) -> tuple[float, str]:
            i = bisect.bisect_right(wt, x) - 1
            return (x - wt[i], woke[i][1]) if i >= 0 else (float("inf"), "")
        by = defaultdict(int)
        for x in ends:
            d, k = last(x)
            if d < 2e-3:
                by[k] += 1
        out["stalls"] = {"route": a.path, "n": len(ends), "a_writer_woke_in_the_2_ms_before_the_resume": dict(by),
                         "the_same_50_ms_earlier_(chance)": sum(last(x - 0.05)[0] < 2e-3 for x in ends)}
    print(json.dumps(out, indent=1))


class Sub:
    """One subflow's data segments as connection-level byte ranges (32-bit DSNs, unwrapped)."""

    def __init__(self, route: int):
        self.route = route
        self.maps: list[tuple[int, int, int]] = []     # (subflow seq, DSN, length), in arrival order
        self.tx: list[tuple[float, int, int, bool]] = []   # (t, dsn_lo, dsn_hi, subflow retransmission)
        self.isn: int | None = None
        self.high = 0                                   # highest relative subflow seq sent

    def dsn_of(self, rel: int) -> int | None:
        for ssn, dsn, ln in reversed(self.maps[-64:]):
            if ssn <= rel < ssn + max(ln, 1):
                return dsn + (rel - ssn)
        return None


def load(pcap_path: Path, g: int):
    from mpcc.lab.pcap import read
    subs: dict[tuple[str, int], Sub] = {}
    acks: dict[tuple[str, int], list[tuple[float, int]]] = defaultdict(list)
    prefix = f"198.18.{g}."
    for x in read(pcap_path):
        if x.src.startswith(prefix):
            key = (x.src, x.sport)
            sf = subs.get(key)
            if sf is None:
                sf = subs[key] = Sub(int(x.src.rsplit(".", 1)[1]) - 1)
            if "S" in x.flags:
                sf.isn = x.seq
                continue
            if sf.isn is None:
                continue
            rel = (x.seq - sf.isn) % M32
            if x.dss and x.dss[1] is not None:
                sf.maps.append((x.dss[2], x.dss[1] % M32, x.dss[3]))
            if x.payload <= 0:
                continue
            lo = sf.dsn_of(rel)
            if lo is None:
                continue
            sf.tx.append((x.t, lo, lo + x.payload, rel < sf.high))
            sf.high = max(sf.high, rel + x.payload)
        elif x.dst.startswith(prefix) and x.dss and x.dss[0] is not None:
            acks[(x.dst, x.dport)].append((x.t, x.dss[0] % M32))
    return subs, acks


def connections(subs, acks):
    """Subflows joined by DSN proximity; per connection: {route: Sub}, data ACKs (t, dsn) sorted,
    DSNs unwrapped against the connection's first."""
    conns: list[dict] = []
    for key, sf in sorted(subs.items(), key=lambda kv: kv[1].route):
        if not sf.tx:
            continue
        first = sf.tx[0][1]
        c = next((c for c in conns if min(abs(first - c["base"]), M32 - abs(first - c["base"])) < (1 << 24)), None)
        if c is None:
            c = {"base": first, "subs": {}, "acks": []}
            conns.append(c)
        c["subs"][sf.route] = sf
        c["acks"] += acks.get(key, [])
    for c in conns:
        base = c["base"] - (1 << 28)

        def un(d, base=base):
            return (d - base) % M32
        for sf in c["subs"].values():
            sf.tx = [(t, un(lo), un(lo) + (hi - lo), r) for t, lo, hi, r in sf.tx]
        c["acks"] = sorted((t, un(d)) for t, d in c["acks"])
        # the data ACK only moves forward: keep its running maximum
        m, out = 0, []
        for t, d in c["acks"]:
            if d < (1 << 31):
                m = max(m, d)
                out.append((t, m))
        c["acks"] = out
    return conns


def owner_map(c):
    """Sorted first transmissions: (dsn_lo, dsn_hi, route, t)."""
    first: dict[int, tuple] = {}
    for sf in c["subs"].values():
        for t, lo, hi, _ in sf.tx:
            if lo not in first or t < first[lo][3]:
                first[lo] = (lo, hi, sf.route, t)
    return sorted(first.values())


def block_of(owners, lo_keys, dsn):
    """The run of consecutive byte ranges first sent on one route that contains ``dsn``."""
    i = bisect.bisect_right(lo_keys, dsn) - 1
    if i < 0:
        return None
    r = owners[i][2]
    j = i
    while j > 0 and owners[j - 1][2] == r and owners[j - 1][1] == owners[j][0]:
        j -= 1
    k = i
    while k + 1 < len(owners) and owners[k + 1][2] == r and owners[k][1] == owners[k + 1][0]:
        k += 1
    return r, owners[j][0], owners[k][1], owners[j][3], owners[k][3]


def ack_time(acks, ack_t, dsn, after):
    """When the data ACK first reached ``dsn`` at or after time ``after``."""
    i = bisect.bisect_left(ack_t, after)
    for t, d in acks[i:]:
        if d >= dsn:
            return t
    return None


def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def sim(a) -> None:
    """The linux mode with the trace patch (notes/dsn_trace_linux_mode.patch) built in: one run
    per simulator seed, its DSN trace on stderr (MPCC_DSN_TRACE) kept as sim<k>.trace."""
    from conn_mechanisms import scenario_text
    a.out.mkdir(parents=True, exist_ok=True)
    text = scenario_text(a.seed, a.secs, a.algorithm)
    (a.out / "net.toml").write_text(text)
    for k in a.sim_seeds:
        code = ("import sys, dataclasses; from mpcc import scenario, sim; "
                f"s = scenario.loads(open({str(a.out / 'net.toml')!r}).read(), 'net.toml'); "
                "s = dataclasses.replace(s, engine={**s.engine, 'sim': {'mptcp': 'linux'}}); "
                f"r = sim.run(s, seed={k}, sample_interval_s=0, measure=({a.warmup}, {a.secs})).result; "
                "g = r.groups['mp']; print(g.rate_mbps, *g.path_rate_mbps)")
        with open(a.out / f"sim{k}.trace", "w") as err:
            out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True,
                                 env={**__import__("os").environ, "MPCC_DSN_TRACE": "1"}, check=True).stdout.split()
        meta = {"seed": a.seed, "algorithm": a.algorithm, "sim_seed": k, "secs": a.secs, "warmup": a.warmup,
                "rate_mbps": float(out[0]), "paths_mbps": [float(x) for x in out[1:]]}
        (a.out / f"sim{k}.json").write_text(json.dumps(meta))
        print(json.dumps(meta), flush=True)


def load_sim(path: Path, group: int):
    """A DSN trace of the linux mode as :func:`connections` gives the testbed's (bytes, seconds)."""
    subs: dict[tuple[int, int], Sub] = {}
    acks: dict[int, list] = defaultdict(list)
    for line in open(path):
        f = line.split()
        if f[0] == "DSNTX" and int(f[2]) == group:
            t, c, r, d, rx = int(f[1]) / 1e9, int(f[3]), int(f[4]), int(f[5]), f[6] == "1"
            sf = subs.setdefault((c, r), Sub(r))
            sf.tx.append((t, d * PAYLOAD, (d + 1) * PAYLOAD, rx))
        elif f[0] == "DSNACK" and int(f[2]) == group:
            acks[int(f[3])].append((int(f[1]) / 1e9, int(f[4]) * PAYLOAD))
    conns = []
    for c in sorted({c for c, _ in subs}):
        conns.append({"subs": {r: sf for (cc, r), sf in subs.items() if cc == c}, "acks": sorted(acks[c])})
    return conns


PAYLOAD = 1448


def report(a) -> None:
    if (a.dir / "meta.json").exists():
        meta = json.loads((a.dir / "meta.json").read_text())
        off = meta["realtime_minus_monotonic"]
        t_lo, t_hi = meta["t0_monotonic"] + off + meta["warmup"], meta["t0_monotonic"] + off + meta["secs"]
        subs, acks = load(a.dir / "host.pcap", meta["group"])
        runs = [(f"testbed seed {meta['testbed_seed']}, sound {meta['sound']}", meta, t_lo, t_hi, connections(subs, acks))]
    else:
        runs = []
        for mp in sorted(a.dir.glob("sim*.json")):
            meta = json.loads(mp.read_text())
            runs.append((f"linux mode seed {meta['sim_seed']}", meta, meta["warmup"], meta["secs"],
                         load_sim(mp.with_suffix(".trace"), 0)))
    rows = []
    for label, meta, t_lo, t_hi, conns in runs:
        rows += report_run(a, label, meta, t_lo, t_hi, conns)
    summary(a, rows)


def report_run(a, label, meta, t_lo, t_hi, conns) -> list:
    print(f"{a.dir}: seed {meta['seed']} {meta['algorithm']} {label}, "
          f"{len(conns)} connections, MP {meta['rate_mbps']:.2f} Mb/s, paths "
          + " ".join(f"{x:.2f}" for x in meta["paths_mbps"]))
    rows = []
    for ci, c in enumerate(conns):
        owners = owner_map(c)
        lo_keys = [o[0] for o in owners]
        ack_t = [t for t, _ in c["acks"]]
        dacks = c["acks"]
        # blocks per route within the measured time
        blocks = defaultdict(list)
        k = 0
        while k < len(owners):
            r, lo, t_first = owners[k][2], owners[k][0], owners[k][3]
            j = k
            while j + 1 < len(owners) and owners[j + 1][2] == r and owners[j][1] == owners[j + 1][0]:
                j += 1
            if t_lo <= t_first <= t_hi:
                blocks[r].append((owners[j][1] - lo, owners[j][3] - t_first))
            k = j + 1
        reinj = sum(1 for sf in c["subs"].values() for t, lo, hi, rx in sf.tx
                    if not rx and t_lo <= t <= t_hi and owners[bisect.bisect_right(lo_keys, lo) - 1][2] != sf.route)
        rtx = {r: sum(1 for t, *_, rx in sf.tx if rx and t_lo <= t <= t_hi) for r, sf in c["subs"].items()}
        print(f" conn {ci}: routes {sorted(c['subs'])}; segments per route "
              + ", ".join(f"{r}: {sum(1 for t, *_ in sf.tx if t_lo <= t <= t_hi)}" for r, sf in sorted(c['subs'].items()))
              + f"; subflow retransmissions {rtx}; reinjected segments {reinj}")
        for r, bl in sorted(blocks.items()):
            sizes = [b for b, _ in bl]
            spans = [d for _, d in bl]
            print(f"   route {r}: {len(bl)} blocks, size median {statistics.median(sizes) / 1024:.1f} KB "
                  f"(p10 {q(sizes, .1) / 1024:.1f}, p90 {q(sizes, .9) / 1024:.1f}), first-to-last send median "
                  f"{statistics.median(spans):.3f} s (p90 {q(spans, .9):.3f})")
        sf = c["subs"].get(a.path)
        if sf is None:
            continue
        tx = [x for x in sf.tx if t_lo <= x[0] <= t_hi]
        for (t1, *_), (t2, lo2, hi2, _) in zip(tx, tx[1:]):
            if t2 - t1 <= a.gap:
                continue
            i = bisect.bisect_right(ack_t, t1) - 1
            d0 = dacks[i][1] if i >= 0 else 0
            j = bisect.bisect_right(ack_t, t2) - 1
            d1 = dacks[j][1] if j >= 0 else 0
            b = block_of(owners, lo_keys, d0)
            if b is None:
                continue
            r, blo, bhi, bt1, bt2 = b
            t_done = ack_time(dacks, ack_t, bhi, t1)
            rows.append({"conn": ci, "t": t1 - t_lo + meta["warmup"], "stall": t2 - t1, "holder": r,
                         "block_kb": (bhi - blo) / 1024, "block_sent_span": bt2 - bt1,
                         "block_left_kb": (bhi - d0) / 1024,
                         "block_acked_after_start": (t_done - t1) if t_done else None,
                         "resume_minus_block_acked": (t2 - t_done) if t_done else None,
                         "dack_moved_kb": (d1 - d0) / 1024,
                         "resume_is_new": lo2 >= max(o[1] for o in owners if o[3] < t2)})
    return rows


def summary(a, rows) -> None:
    if not rows:
        print(" no stalls")
        return
    print(f" stalls of route {a.path} longer than {a.gap} s: {len(rows)}; duration median "
          f"{statistics.median(r['stall'] for r in rows):.3f} s (p10 {q([r['stall'] for r in rows], .1):.3f}, "
          f"p90 {q([r['stall'] for r in rows], .9):.3f}); total {sum(r['stall'] for r in rows):.1f} s")
    holders = defaultdict(int)
    for r in rows:
        holders[r["holder"]] += 1
    print(f"   data ACK waits on route: {dict(holders)}")
    for k in ("block_kb", "block_left_kb", "block_sent_span", "block_acked_after_start", "resume_minus_block_acked",
              "dack_moved_kb"):
        xs = [r[k] for r in rows if r[k] is not None]
        if xs:
            print(f"   {k}: median {statistics.median(xs):.3f} (p10 {q(xs, .1):.3f}, p90 {q(xs, .9):.3f}, n {len(xs)})")
    print(f"   resumes with new data: {sum(r['resume_is_new'] for r in rows)} of {len(rows)}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seed", type=int, default=9)
    r.add_argument("--algorithm", default="olia")
    r.add_argument("--testbed-seed", type=int, default=51)
    r.add_argument("--secs", type=float, default=40.0)
    r.add_argument("--warmup", type=float, default=10.0)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--ss", action="store_true", help="also sample the MPTCP sockets' memory with ss -M -m (ss.txt)")
    r.add_argument("--wake", action="store_true", help="also record the writers' wake-ups with ftrace (wake.trace)")
    w = sub.add_parser("wakes")
    w.add_argument("dir", type=Path)
    w.add_argument("--path", type=int, default=1, help="route whose stalls are checked against the wake-ups")
    w.add_argument("--gap", type=float, default=0.1)
    m = sub.add_parser("sim")
    m.add_argument("--seed", type=int, default=9)
    m.add_argument("--algorithm", default="olia")
    m.add_argument("--sim-seeds", type=lambda x: [int(v) for v in x.split(",")], default=[0, 1, 2, 3])
    m.add_argument("--secs", type=float, default=40.0)
    m.add_argument("--warmup", type=float, default=10.0)
    m.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("report")
    p.add_argument("dir", type=Path)
    p.add_argument("--path", type=int, default=1, help="route whose stalls are traced")
    p.add_argument("--gap", type=float, default=0.1)
    p.add_argument("--json", type=Path)
    a = ap.parse_args()
    {"run": run, "sim": sim, "report": report, "wakes": wakes}[a.cmd](a)


if __name__ == "__main__":
    main()
