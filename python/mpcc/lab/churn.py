"""Subflow churn soak (issue 15 item 2; root): N MPTCP connections over three rate-limited paths
under a churn schedule (schedule(): ``alternate``, every second the server's endpoint of path 2 is
removed or re-added (REMOVE_ADDR / ADD_ADDR to every connection) and path 3's link goes down or up;
``random``, one endpoint event and one link outage of any path per second from a seed). Checks:

* no new kernel warning in dmesg (WARNING, BUG, oops, refcount, lockdep, RCU stall);
* nothing leaked: after unload the struct_ops and every map the load created are gone (the
  programs keep per-connection state in the socket's CA area, so a leak would be a map or the
  struct_ops itself), and the namespaces are removed;
* every connection progresses: bytes received per connection in each 10 s window > 0;
* with --trace: the subflow set the coupled rule sums over equals the kernel's (ss) at the same
  instant (subflow_check.py), and what stalled connections looked like (diagnose_stalls).

    flock /tmp/mpcc-bench.lock mpcc lab churn [--conns 100] [--secs 600]
          [--pattern alternate|random --seed N] [--trace FILE] [--json FILE] [ALGO ...]
    (ALGO: an mpcc algorithm, or the kernel's reno / cubic for comparison; the short CI run is
    tests/kernel/test_churn.py)

Internally the same file is the traffic: ``churn.py sink PORT N`` (server: per-connection byte
counts, one JSON line a second) and ``churn.py send HOST PORT N SECS CA`` (client threads)."""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from mpcc.lab import ROOT
from mpcc.lab import netlab  # noqa: E402

IPPROTO_MPTCP = 262
PORT = 5301
WINDOW_S = 10
#: ``--deploy``: the settings docs/kernel.md "Deploying under subflow churn" recommends for a host
#: whose subflows come and go: a 128 kB send-buffer maximum, and on 6.15+ a 5 s
#: retransmission-timer maximum (the sysctl does not exist before 6.15: left out there, and said so)
DEPLOY_SYSCTLS = (("net.ipv4.tcp_wmem", "4096 16384 131072"), ("net.ipv4.tcp_rto_max_ms", "5000"))


def deploy_sysctls(proc: Path = Path("/proc/sys")) -> tuple[list[str], list[str]]:
    """``--deploy``'s KEY=VALUE settings this kernel has, and the keys it lacks (read from /proc/sys:
    a namespace has the same sysctls as the kernel it runs on)."""
    have, lack = [], []
    for key, value in DEPLOY_SYSCTLS:
        if (proc / key.replace(".", "/")).exists():
            have.append(f"{key}={value}")
        else:
            lack.append(key)
    return have, lack


def with_deploy(sysctls: list[str], proc: Path = Path("/proc/sys")) -> tuple[list[str], list[str]]:
    """``--deploy`` added to the ``--sysctl`` list: the recommended settings this kernel has first, a
    ``--sysctl`` of the same key instead of the recommended one; and the keys the kernel lacks."""
    have, lack = deploy_sysctls(proc)
    given = {kv.split("=", 1)[0] for kv in sysctls}
    return [kv for kv in have if kv.split("=", 1)[0] not in given] + list(sysctls), lack


# --- traffic (run inside the namespaces) ------------------------------------------------------
def _family(addr: str) -> int:
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def sink(port: int, n: int, secs: float, bind: str = "0.0.0.0") -> None:
    """Accept n MPTCP connections on bind:port (``::`` for IPv6) and print the bytes each received,
    once a second, for secs (+30 s for the last to finish)."""
    ls = socket.socket(_family(bind), socket.SOCK_STREAM, IPPROTO_MPTCP)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((bind, port))
    ls.listen(n)
    ls.settimeout(120)
    counts, done, peers = [0] * n, [False] * n, [""] * n
    print("ready", flush=True)

    def serve(i, c):
        buf = bytearray(1 << 16)
        while True:
            try:
                k = c.recv_into(buf)
            except OSError:          # silent until the run's end: its windows count as stalled
                break
            if not k:
                break
            counts[i] += k
        done[i] = True
        c.close()

    def accept():
        for i in range(n):
            c, peer = ls.accept()
            peers[i] = f"{peer[0]}:{peer[1]}"
            # no shorter timeout: the sink closes nothing during the run, so a stalled connection that
            # could still recover counts as a stall, not as a loss
            c.settimeout(secs + 30)
            threading.Thread(target=serve, args=(i, c), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    t0 = time.monotonic()
    # "mono": CLOCK_MONOTONIC, one clock for every process of the machine (network namespaces share
    # it), so that run() can place the samples on its own time axis
    while not all(done) and time.monotonic() - t0 < secs + 30:
        time.sleep(1.0)
        now = time.monotonic()
        print(json.dumps({"t": round(now - t0, 2), "mono": round(now, 3), "bytes": counts}), flush=True)
    now = time.monotonic()
    print(json.dumps({"t": round(now - t0, 2), "mono": round(now, 3), "bytes": counts, "peers": peers, "end": True}),
          flush=True)


def send(host: str, port: int, n: int, secs: float, ca: str) -> None:
    stop = time.monotonic() + secs
    buf = memoryview(bytearray(1 << 16))
    errors = []

    def run():
        try:
            s = socket.socket(_family(host), socket.SOCK_STREAM, IPPROTO_MPTCP)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ca.encode())
            s.connect((host, port))
            s.settimeout(2.0)
            while time.monotonic() < stop:
                try:
                    s.send(buf)
                except socket.timeout:
                    continue
            s.close()
        except OSError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
        time.sleep(0.01)
    for t in threads:
        t.join()
    print(json.dumps({"errors": errors}), flush=True)


# --- lab: netlab.ThreePaths (rate limits at the client) / ThreePathsBridged (in a middle namespace) --
ThreePaths, ThreePathsBridged = netlab.ThreePaths, netlab.ThreePathsBridged
BOTTLENECKS = {"sender": ThreePaths, "bridge": ThreePathsBridged}


# --- churn schedules: churn_patterns.py -------------------------------------------------------
from mpcc.lab.churn_patterns import PATTERNS, load_schedule, schedule  # noqa: E402,F401 (API)


# --- subflow snapshots (the kernel's view: ss, i.e. the inet_diag/MPTCP diag) ------------------
_SS_FIELDS = re.compile(r"\b(cwnd|ssthresh|rto|backoff|unacked|retrans|lost|lastsnd|lastack|lastrcv|bytes_acked|"
                        r"bytes_sent|bytes_retrans|sacked|subflows|rtt|notsent|snd_wnd):([0-9./]+)")
_SS_TOKEN = re.compile(r"token:[0-9a-f]+\(id:(\d+)\)/([0-9a-f]+)\(id:(\d+)\)")


def parse_ss(text: str) -> dict:
    """`ss -tinHM` of the client → {"msk": {local: {...}}, "sf": [{...}]}: every MPTCP socket
    (local address:port, token, subflows) and every TCP subflow (addresses, state, cwnd, ssthresh,
    rto, backoff, unacked, the connection's token, its congestion control; with `ss -m`, the socket
    memory: r/rb receive queue/buffer, t/tb write memory/send buffer, w queued)."""
    out = {"msk": {}, "sf": []}
    lines = text.splitlines()
    for head, info in zip(lines[::2], lines[1::2]):
        f = head.split()
        if len(f) < 6:
            continue
        rec = {"state": f[1], "local": f[4], "remote": f[5]}
        for k, v in _SS_FIELDS.findall(info):
            rec[k] = v
        for k, v in re.findall(r"\b(busy|rwnd_limited|sndbuf_limited):(\d+)ms", info):
            rec[k] = int(v)             # TCP's chrono: ms busy, and limited by the peer's window / sndbuf
        sk = re.search(r"skmem:\(([^)]*)\)", info)   # socket memory (ss -m): rb/tb buffers, w queued
        if sk:
            rec.update({k: int(v) for k, v in re.findall(r"([a-z]+)(\d+)", sk.group(1)) if k in ("r", "rb", "t", "tb", "w")})
        pr = re.search(r"pacing_rate (\d+)bps", info)
        if pr:
            rec["pacing_rate"] = int(pr.group(1))
        m = re.search(r"token:([0-9a-f]+)", info)
        if f[0] == "mptcp":
            rec["token"] = m.group(1) if m else ""
            for k in ("write_seq", "snd_una"):        # data-level sequence numbers (hex)
                v = re.search(rf"\b{k}:([0-9a-f]+)", info)
                rec[k] = int(v.group(1), 16) if v else None
            out["msk"][f[4]] = rec
        elif f[0] == "tcp":
            t = _SS_TOKEN.search(info)
            rec["token"] = t.group(2) if t else ""
            fl = re.search(r"tcp-ulp-mptcp flags:(\w*)", info)
            rec["flags"] = fl.group(1) if fl else ""
            rest = re.sub(r"skmem:\([^)]*\)", "", info).split()     # ss -m puts skmem first
            rec["ca"] = rest[0] if rest else ""
            out["sf"].append(rec)
    return out


def mptcp_counters(ns: str) -> dict[str, int]:
    """The namespace's non-zero MPTcpExt counters (stale subflows, retransmissions, pruned data...)."""
    out = subprocess.run(["ip", "netns", "exec", ns, "nstat", "-az"], capture_output=True, text=True).stdout
    return {f[0]: int(f[1]) for f in (ln.split() for ln in out.splitlines())
            if len(f) >= 2 and f[0].startswith("MPTcpExt") and f[1].isdigit() and int(f[1])}


def qdisc_drops(lab) -> dict[str, int]:
    """Packets each path's rate limit (tbf) dropped: on the client's own interface (sender
    bottleneck: a local transmit failure for TCP) or in the middle namespace (bridge)."""
    ns, dev = (lab.ns["mid"], "m{}s") if "mid" in lab.ns else (lab.ns["cli"], "p{}c")
    out = {}
    for i in (1, 2, 3):
        text = subprocess.run(["tc", "-n", ns, "-s", "qdisc", "show", "dev", dev.format(i)], capture_output=True,
                              text=True).stdout
        m = re.search(r"tbf .*?dropped (\d+)", text, re.S)
        out[f"path{i}"] = int(m.group(1)) if m else -1
    return out


# --- the subflow-set check: subflow_check.py -------------------------------------------------
from mpcc.lab.subflow_check import can_send, check_subflow_sets, pm_subflow_events  # noqa: E402,F401 (API)


def diagnose_stalls(trace: Path, res: dict) -> dict:
    """What the stalled connections looked like in the snapshots (the kernel's view), against the
    connection-windows that progressed: the share of snapshots in which the connection's
    data-level ACK (msk snd_una) did not move since the previous one, in which an established
    subflow had data queued but nothing in flight (notsent > 0, unacked = 0: its congestion window
    was not what stopped it), with a zero send window, with TCP's rwnd_limited time growing, and
    in which a subflow was in RTO backoff."""
    snaps = [json.loads(ln) for ln in trace.read_text().splitlines()]
    stalled = {(s["conn"], s["window"]) for s in res["stalled_windows"]}
    tally = {k: {"samples": 0, "data_ack_frozen": 0, "queued_but_idle_subflow": 0, "zero_send_window": 0,
                 "subflow_in_backoff": 0, "rwnd_limited_growing": 0, "every_subflow_queued_but_idle": 0,
                 "backed_off_subflow_holds_unacked": 0, "rto_base_over_1s_holds_unacked": 0} for k in (True, False)}
    for conn, peer in enumerate(res.get("peers", [])):
        prev, last_rwnd = None, {}
        for snap in snaps:
            msk = snap["msk"].get(peer)
            if not msk:
                prev = None
                continue
            sfs = [x for x in snap["sf"] if x["token"] == msk["token"] and x["state"] == "ESTAB"]
            t = tally[(conn, int(snap["t"] // WINDOW_S)) in stalled]
            t["samples"] += 1
            t["data_ack_frozen"] += prev is not None and msk.get("snd_una") == prev
            t["queued_but_idle_subflow"] += any(x.get("notsent") and not x.get("unacked") for x in sfs)
            t["zero_send_window"] += any(x.get("notsent") and x.get("snd_wnd", "0") == "0" for x in sfs)   # ss omits a zero snd_wnd
            t["subflow_in_backoff"] += any(x.get("backoff") for x in sfs)
            # no subflow has anything in flight, all have data queued (local transmit failures, probe timer)
            t["every_subflow_queued_but_idle"] += bool(sfs) and all(x.get("notsent") and not x.get("unacked")
                                                                    for x in sfs)
            # the data at the connection's snd_una likely waits for that subflow's (backed-off) RTO
            t["backed_off_subflow_holds_unacked"] += any(x.get("backoff") and x.get("unacked") for x in sfs)
            # its RTO before backoff over 1 s (all paths' base RTT is ≤ 0.1 s): an inflated RTT estimate
            t["rto_base_over_1s_holds_unacked"] += any(x.get("unacked") and float(x.get("rto", 0)) >
                                                       1000 * 2 ** int(x.get("backoff", 0)) for x in sfs)
            # TCP's own account (chrono): did a subflow spend the last second limited by the peer's window?
            t["rwnd_limited_growing"] += any(x.get("rwnd_limited", 0) > last_rwnd.get(x["local"], 1 << 62) for x in sfs)
            last_rwnd.update({x["local"]: x.get("rwnd_limited", 0) for x in sfs})
            prev = msk.get("snd_una")
    return {("stalled" if k else "progressing"): {**{f: round(v / max(1, t["samples"]), 3) for f, v in t.items()
                                                     if f != "samples"}, "samples": t["samples"]}
            for k, t in tally.items()}


def subflow_snapshot(ns: str) -> dict:
    return parse_ss(subprocess.run(["ip", "netns", "exec", ns, "ss", "-tinmHM"], capture_output=True,
                                   text=True).stdout)


# --- checks -----------------------------------------------------------------------------------

def maps() -> dict[int, str]:
    out = subprocess.run(["bpftool", "-j", "map", "list"], capture_output=True, text=True).stdout
    return {m["id"]: m.get("name", "") for m in json.loads(out or "[]")}


def struct_ops_ids() -> set[int]:
    """Ids of every struct_ops map present (also unregistered ones that sockets still hold)."""
    out = subprocess.run(["bpftool", "-j", "struct_ops", "list"], capture_output=True, text=True).stdout
    return {int(r["id"]) for r in json.loads(out or "[]")}


def orphans() -> int:
    """Orphaned TCP sockets (closed by their process, still in the kernel), /proc/net/sockstat."""
    m = re.search(r"orphan (\d+)", Path("/proc/net/sockstat").read_text())
    return int(m.group(1)) if m else -1


def on_run_clock(samples: list[dict], t0: float) -> list[dict]:
    """The sink's samples with ``t`` counted from the run's start ``t0`` (monotonic s), the instant
    the traffic starts, not from the sink's own start: whatever ran between the two (the path
    manager's start, ~0.5 s on the host, 10–20 s in a TCG guest) would otherwise be the first
    window's, and count as a stall of every connection. Samples without ``mono``
    (an older sink) are kept as they are."""
    return [{**smp, "t": round(smp["mono"] - t0, 2)} if "mono" in smp else smp for smp in samples]


def windows(samples: list[dict], n: int, secs: float) -> list[list[int]]:
    """Bytes per connection in each whole WINDOW_S window of the run (from the per-second samples,
    ``t`` in s from the run's start: on_run_clock)."""
    out = []
    edges = [k * WINDOW_S for k in range(int(secs // WINDOW_S) + 1)]

    def at(t):                      # counts of the last sample at or before t (zeros before any)
        best = [0] * n
        for smp in samples:
            if smp["t"] <= t + 0.5:
                best = smp["bytes"]
        return best

    for a, b in zip(edges, edges[1:]):
        ca, cb = at(a), at(b)
        out.append([cb[i] - ca[i] for i in range(n)])
    return out


BUILTIN = ("reno", "cubic")          # the kernel's own controls, for comparison (no BPF load)


class _Builtin:
    """Stands in for a bpf.Registration when the control is the kernel's own."""

    def __init__(self, name):
        self.kernel_name, self.created = name, False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def queue_for(conns: int) -> int:
    """Each path's queue: 150 kB, or 4 packets (6 kB) per connection when more. Every connection
    has a subflow on every path and the paths have no propagation delay, so the queue is all a
    window can fill: at one packet per subflow (150 kB, 100 connections) Reno runs on
    retransmission timeouts even without churn, at four it does not."""
    return max(150000, 6000 * conns)


def run(algo: str, conns: int, secs: float, rate_mbit: float = 20.0, pattern: str = "alternate",
        seed: int = 0, trace: Path | None = None, rmem: str | None = None,
        plan: list | None = None, bottleneck: str = "bridge", queue_bytes: int | None = None,
        sysctls: tuple[str, ...] = (), pcap: Path | None = None, pcap_paths: tuple[int, ...] = (3,),
        pcap_max_mb: int = 64, pm: str = "kernel") -> dict:
    """One soak of algo (an mpcc algorithm, or "reno"/"cubic"). trace: write per-second subflow
    snapshots of the client (ss) there, one JSON line each (see subflow_snapshot). plan: a
    schedule to use instead of the pattern's (load_schedule). bottleneck: where the rate limits
    sit, "bridge" (a middle namespace, ThreePathsBridged) or "sender" (the client's interfaces).
    queue_bytes: each path's tbf queue limit (default queue_for(conns)). sysctls: KEY=VALUE set in
    both end namespaces. pcap: a directory for headers-only captures (pcap.py) of pcap_paths on the
    client's and the server's interface (cli_p3.pcap, srv_p3.pcap), run time 0 = res["t0_unix"].
    pm: the client's path manager, "kernel" (upstream's in-kernel one) or "rejoin" (mpcc kernel pm,
    started in the client's namespace before the traffic; its log is <trace>.pm.jsonl with --trace,
    its summary res["path_manager"])."""
    from mpcc.kernel import bpf, records as bpf_records
    builtin = algo in BUILTIN
    kname = algo if builtin else bpf.kernel_name(algo)
    plan = schedule(pattern, secs, seed) if plan is None else plan
    queue_bytes = queue_for(conns) if queue_bytes is None else queue_bytes
    klog, m0 = netlab.KernelLog(), maps()
    res = {"algorithm": algo, "kernel_name": kname, "conns": conns, "secs": secs, "rate_mbit": rate_mbit,
           "pattern": pattern, "seed": seed, "rmem": rmem, "bottleneck": bottleneck, "queue_bytes": queue_bytes,
           "sysctls": list(sysctls), "path_manager_kind": pm, "load_before": round(os.getloadavg()[0], 2),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kernel": os.uname().release}
    events = {"endpoint_add": 0, "endpoint_del": 0, "endpoint_refused": 0, "link_down": 0, "link_up": 0}
    lab_ = BOTTLENECKS[bottleneck](rate_mbit, rmem, queue_bytes, tuple(sysctls))
    with (_Builtin(algo) if builtin else bpf.load(algo, diag=True)) as reg, lab_ as lab:
        m_loaded = {i: n for i, n in maps().items() if i not in m0}
        res["created_by_load"] = sorted(set(m_loaded.values()))
        srv = subprocess.Popen(["ip", "netns", "exec", lab.ns["srv"], sys.executable, "-m", "mpcc.lab.churn", "sink", str(PORT),
                                str(conns), str(secs)], stdout=subprocess.PIPE, text=True)
        pm_proc, pm_log = None, None
        try:
            assert srv.stdout.readline().strip() == "ready"
            if pm == "rejoin":
                pm_log = Path(f"{trace}.pm.jsonl") if trace else Path(f"/tmp/{lab.tag}.pm.jsonl")
                pm_log.unlink(missing_ok=True)
                pm_proc = subprocess.Popen(["ip", "netns", "exec", lab.ns["cli"], sys.executable, "-m",
                                            "mpcc.pm", "--ready", "--log", str(pm_log)],
                                           stdout=subprocess.PIPE, text=True,
                                           env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
                assert pm_proc.stdout.readline().strip() == "ready", "the path manager did not start"
            cli = subprocess.Popen(["ip", "netns", "exec", lab.ns["cli"], sys.executable, "-m", "mpcc.lab.churn", "send",
                                    lab.server, str(PORT), str(conns), str(secs), reg.kernel_name],
                                   stdout=subprocess.PIPE, text=True)
            caps = []
            if pcap:
                pcap.mkdir(parents=True, exist_ok=True)
                caps = [subprocess.Popen(["ip", "netns", "exec", lab.ns[role], sys.executable, "-m", "mpcc.lab.pcap",
                                          f"p{i}{role[0]}", str(secs + 3), str(pcap / f"{role}_p{i}.pcap"), "96",
                                          str(pcap_max_mb << 20)],
                                         stdout=subprocess.PIPE, text=True)
                        for i in pcap_paths for role in ("cli", "srv")]
            samples = []
            reader = threading.Thread(target=lambda: [samples.append(json.loads(ln)) for ln in srv.stdout
                                                      if ln.startswith("{")], daemon=True)
            reader.start()
            t0 = time.monotonic()
            res["t0_unix"], res["t0_monotonic"] = time.time(), t0
            stop_trace = threading.Event()
            # the rule's record is ours to switch on only if this run registered the program
            own = not builtin and reg.created
            if trace and own:
                bpf_records.trace_set(algo, True)
            if trace:

                def sampler(f=open(trace, "w")):
                    with f:
                        while not stop_trace.wait(1.0):
                            a = time.monotonic_ns()
                            snap = subflow_snapshot(lab.ns["cli"])
                            snap["ss_ns"] = [a, time.monotonic_ns()]
                            if own:
                                snap["seen"] = {f"{k:x}": v for k, v in bpf_records.seen_read(algo).items()}
                            snap["t"] = round(time.monotonic() - t0, 2)
                            f.write(json.dumps(snap) + "\n")
                tracer = threading.Thread(target=sampler, daemon=True)
                tracer.start()
            done = []                  # (start, end) of each executed event, monotonic s
            for when, kind, path, on in plan:
                time.sleep(max(0.0, t0 + when - time.monotonic()))
                if cli.poll() is not None or time.monotonic() - t0 > secs:
                    break
                done.append((time.monotonic(), None))
                if kind == "endpoint":
                    if lab.endpoint(on, path):
                        events["endpoint_add" if on else "endpoint_del"] += 1
                    else:
                        events["endpoint_refused"] += 1
                else:
                    lab.link(on, path)
                    events["link_up" if on else "link_down"] += 1
                done[-1] = (done[-1][0], time.monotonic())
            while cli.poll() is None and time.monotonic() - t0 < secs:   # a schedule that ends early
                time.sleep(0.2)
            stop_trace.set()
            for i in (1, 2, 3):      # let every subflow finish its close over a working path
                lab.link(True, i)
            if trace:
                tracer.join(timeout=10)
                if own:
                    bpf_records.trace_set(algo, False)
                    res["subflow_set_check"] = check_subflow_sets(
                        trace, done, conn_events=pm_subflow_events(pm_log) if pm_log else None)
                elif not builtin:
                    res["subflow_set_check"] = {"skipped": "the registration is shared with another process"}
            if not builtin:
                res["cwnd_jumps"] = bpf_records.jumps_read(algo)
            res["plan_events"] = len(plan)
            # executed events (monotonic s, as the trace's ss_ns): to re-run check_subflow_sets later
            res["executed"] = [[round(e0, 4), round(e1 or e0, 4)] for e0, e1 in done]
            # and what each was ([t s, kind, path, on]): a --schedule file's plan is in no other record
            res["plan"] = [list(e) for e in plan[:len(done)]]
            res["mptcp_counters"] = {role: mptcp_counters(lab.ns[role]) for role in ("cli", "srv")}
            res["qdisc_drops"] = qdisc_drops(lab)
            res["client"] = json.loads(cli.communicate(timeout=secs + 60)[0].strip().splitlines()[-1])
            if pm_proc:
                pm_proc.terminate()
                out = pm_proc.communicate(timeout=30)[0].strip().splitlines()
                res["path_manager"] = json.loads(out[-1]) if out and out[-1].startswith("{") else {"exit": pm_proc.returncode}
                if not trace:
                    pm_log.unlink(missing_ok=True)
            srv.wait(timeout=60)
            reader.join(timeout=5)
            res["teardown"] = lab.close_sockets(("cli", "srv"), wait_s=30)
            res["pcap"] = [json.loads(c.communicate(timeout=30)[0] or "{}") for c in caps]
        finally:
            for p in (srv, *caps, *([pm_proc] if pm_proc else [])):
                if p.poll() is None:
                    p.kill()
    res["events"] = events
    samples = on_run_clock(samples, t0)
    res["peers"] = samples[-1].get("peers", []) if samples else []
    res["endpoint_refusals"] = sorted(set(getattr(lab, "refusals", [])))[:5]
    win = windows(samples, conns, secs)
    res["windows"] = len(win) * conns
    res["stalled_windows"] = [{"conn": i, "window": w} for w, row in enumerate(win) for i, b in enumerate(row) if b <= 0]
    if trace:
        res["stall_diagnosis"] = diagnose_stalls(trace, res)
    res["total_mbit_s"] = round(8 * sum(samples[-1]["bytes"]) / secs / 1e6, 1) if samples else 0.0
    # leaks: after release the struct_ops and the maps its load created must go (the kernel frees
    # them when the last socket that used the ops is gone: wait up to 60 s). Only meaningful if
    # this run registered it and nobody else holds it on this shared machine.
    others = [] if builtin else [st for st in bpf.status() if st.kernel_name == kname and (st.holders or st.persistent)]
    if builtin:
        res["leak_check"] = "not applicable: the kernel's own control"
        res["leaked_maps"], res["struct_ops_left"], res["orphan_sockets"] = [], False, orphans()
    elif not reg.created or others:
        res["leak_check"] = "skipped: the registration is shared with another process"
        res["leaked_maps"], res["struct_ops_left"] = [], False
    else:
        t1 = time.monotonic()
        while time.monotonic() - t1 < 60 and (reg.map_id in struct_ops_ids() or set(m_loaded) & set(maps())):
            time.sleep(0.5)
        res["freed_after_s"] = round(time.monotonic() - t1, 1)
        res["leaked_maps"] = sorted({m_loaded[i] for i in set(m_loaded) & set(maps())})
        res["struct_ops_left"] = reg.map_id in struct_ops_ids()   # this load's, not an older one of the name
        # what still holds it: subflows orphaned by the namespace's deletion keep their congestion
        # control until they time out (FIN retransmissions over a path that was down) — slow, not a leak
        res["orphan_sockets"] = orphans()
    res["netns_left"] = [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
                         .stdout.split() if n.startswith(lab.tag)]
    res["kernel_log"] = klog.stop()
    res["dmesg_warnings"] = netlab.kernel_log_warnings(res["kernel_log"])
    # warnings whose dump shows the host kernel's skipped-program defect (netlab.host_defect): kept, reported,
    # not counted against the controls (a mainline kernel never produces them)
    res["host_defect_warnings"] = res["kernel_log"].get("host_defect_warnings", [])
    res["pass"] = not (res["stalled_windows"] or res["leaked_maps"] or res["struct_ops_left"]
                       or res.get("cwnd_jumps", {}).get("unrepaired")
                       or res["netns_left"] or res["dmesg_warnings"] or res["client"]["errors"])
    return res


def main(argv=None) -> int:
    if argv is None and netlab.host_role(sink, send):
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithms", nargs="*", default=["balia", "lia", "olia"])
    ap.add_argument("--conns", type=int, default=100)
    ap.add_argument("--secs", type=float, default=600.0)
    ap.add_argument("--rate", type=float, default=20.0, help="Mbit/s per path (tbf at the client)")
    ap.add_argument("--pattern", choices=PATTERNS, default="alternate", help="churn schedule (see schedule())")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random and storm patterns")
    ap.add_argument("--schedule", type=Path, help="churn from a JSON file instead of --pattern: a list of "
                    "[t s, \"endpoint\"|\"link\", path 1-3, add/up true|false] (see load_schedule())")
    ap.add_argument("--trace", type=Path, help="per-second subflow snapshots (ss) of the client, JSON lines")
    ap.add_argument("--rmem", help="net.ipv4.tcp_rmem in both namespaces, 'MIN DEFAULT MAX' bytes "
                    "(default: the kernel's, 4096 131072 33554432 here)")
    ap.add_argument("--bottleneck", choices=sorted(BOTTLENECKS), default="bridge",
                    help="where the rate limits sit: a middle namespace between client and server (bridge, "
                    "the default, as the papers' Dummynet box) or the client's own interfaces (sender)")
    ap.add_argument("--queue", type=int, help="each path's rate-limit queue, bytes (tbf limit; default "
                    "150 kB or 6 kB per connection when more, queue_for())")
    ap.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="a sysctl for the client and server namespaces (repeatable), e.g. to isolate a cause")
    ap.add_argument("--deploy", action="store_true",
                    help="the recommended settings under churn (docs/kernel.md): " + ", ".join(
                        f"{k}={v}" for k, v in DEPLOY_SYSCTLS) + " (6.15+); a --sysctl of the same key wins")
    ap.add_argument("--pm", choices=("kernel", "rejoin"), default="kernel",
                    help="the client's path manager: upstream's in-kernel one (default), or rejoin, mpcc kernel pm "
                    "(re-joins refused and closed paths; docs/kernel.md, including its known kernel defect under it)")
    ap.add_argument("--pcap", type=Path, metavar="DIR", help="headers-only captures (96 bytes a packet) of the "
                    "flapping path's client and server interfaces, for RTT questions (pcap.py)")
    ap.add_argument("--pcap-paths", default="3", help="paths to capture with --pcap, e.g. 2,3 (default 3)")
    ap.add_argument("--pcap-max-mb", type=int, default=64, help="--pcap: stop each file at this size (MB)")
    ap.add_argument("--json", type=Path, help="write the results here")
    a = ap.parse_args(argv)
    plan = None
    if a.queue is not None and a.queue < 1500:
        print(f"churn: error: --queue {a.queue}: give at least one packet, 1500 bytes", file=sys.stderr)
        return 2
    bad = [kv for kv in a.sysctl if not re.fullmatch(r"[a-z0-9_.]+=\S(.*\S)?", kv)]   # "tcp_wmem=4096 16384 131072" too
    if bad:
        print(f"churn: error: --sysctl {bad[0]!r}: give KEY=VALUE, e.g. net.ipv4.tcp_timestamps=0", file=sys.stderr)
        return 2
    if not 1 <= a.pcap_max_mb <= 4096:
        print(f"churn: error: --pcap-max-mb {a.pcap_max_mb}: give 1 to 4096", file=sys.stderr)
        return 2
    if not re.fullmatch(r"[123](,[123])*", a.pcap_paths):
        print(f"churn: error: --pcap-paths {a.pcap_paths!r}: give paths 1-3, comma-separated, e.g. 2,3",
              file=sys.stderr)
        return 2
    if a.deploy:
        a.sysctl, lack = with_deploy(a.sysctl)
        if lack:
            print(f"churn: --deploy: this kernel has no {', '.join(lack)} (6.15+): run without it", file=sys.stderr)
    if a.schedule:
        try:
            plan = load_schedule(a.schedule, a.secs)
        except ValueError as e:
            print(f"churn: error: {e}", file=sys.stderr)
            return 2
    if os.geteuid() != 0:
        print("churn: needs root (BPF, network namespaces): run with sudo", file=sys.stderr)
        return 2
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    results = []
    for algo in a.algorithms:
        r = run(algo, a.conns, a.secs, a.rate, a.pattern if plan is None else f"file {a.schedule}", a.seed,
                a.trace, a.rmem, plan, a.bottleneck, a.queue, a.sysctl,
                a.pcap / algo if a.pcap else None, tuple(int(x) for x in a.pcap_paths.split(",")), a.pcap_max_mb,
                a.pm)
        results.append(r)
        print(f"churn: {algo}: {'pass' if r['pass'] else 'FAIL'}: {len(r['stalled_windows'])}/{r['windows']} "
              f"stalled windows, {len(r['dmesg_warnings'])} warnings "
              f"(+{len(r['host_defect_warnings'])} of the host kernel's defect), leaked maps {r['leaked_maps']}, "
              f"{r['events']}, {r['total_mbit_s']} Mbit/s"
              + (f", path manager {r['path_manager']}" if "path_manager" in r else ""), flush=True)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["pass"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
