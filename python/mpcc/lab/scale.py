"""Scale (issue 15 item 3; root): N concurrent MPTCP connections with 2, 3 and 4 subflows, one
congestion control at a time (BPF mpcc_* or the kernel's reno/cubic), over unshaped veth.

Lab: three client namespaces c2, c3, c4 and one server namespace; client ck has one veth pair to
the server and k addresses on it, with k − 1 ``subflow`` endpoints (MPTCP limit k − 1), so each
of its connections opens k subflows. The connections are split evenly over the three clients.
One process per namespace drives all its sockets non-blocking (selectors), so 1,000 connections
are ~1,000 sockets, not 1,000 threads. Per congestion control:

1. connect all N; wait until every connection has its k subflows (``ss -ti`` in each client,
   subflows grouped by MPTCP token);
2. memory of the idle connections: /proc/slabinfo (active objects × object size, per cache),
   /proc/meminfo Slab, per-namespace /proc/net/sockstat; minus the same before connecting;
3. send on every connection for SECS; mid-run the same memory snapshot (now with socket
   buffers) and every subflow's congestion control and bytes_acked;
4. close; check every connection delivered data to the server, and that nothing is left:
   namespaces gone, the struct_ops and the maps its load created freed, slab objects back near
   the baseline, no new kernel warning in dmesg.

BPF map memory is read from ``bpftool map show`` (bytes_memlock): the programs keep
per-connection state in the socket's congestion-control area (icsk_ca_priv), so their maps do
not grow with connections — the number reported is per load, not per connection.

    flock /tmp/mpcc-bench.lock mpcc lab scale [--conns 1000] [--secs 10]
        [--json FILE] [CC ...]        (CC: balia lia olia reno cubic, the default)

Internally the same file is the traffic: ``scale.py sink PORT N`` and ``scale.py send HOST PORT N
SECS CA`` (a line protocol on stdin/stdout, see :func:`send`). The CI-sized run is
tests/kernel/test_scale.py (50 connections).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

from mpcc.lab import netlab  # noqa: E402

IPPROTO_MPTCP = 262
PORT = 5401
CHUNK = 1 << 16
GROUPS = (2, 3, 4)                 # subflows per connection, one client namespace each
BUILTIN = ("reno", "cubic")


def _nofile(n: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, min(hard, n + 256)) if hard != resource.RLIM_INFINITY else max(soft, n + 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


# --- traffic (run inside the namespaces) ------------------------------------------------------
def sink(port: int, n: int, timeout: float) -> None:
    """Accept n MPTCP connections on port, count bytes per connection, print one JSON line when
    all n have closed (or after timeout s without progress)."""
    _nofile(n)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(4096)
    ls.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    counts: dict[int, int] = {}
    accepted = closed = 0
    buf = bytearray(CHUNK)
    print("ready", flush=True)
    last = time.monotonic()
    while closed < n and time.monotonic() - last < timeout:
        for key, _ in sel.select(1.0):
            if key.data is None:
                try:
                    c, _ = ls.accept()
                except BlockingIOError:
                    continue
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ, accepted)
                counts[accepted] = 0
                accepted += 1
                continue
            try:
                k = key.fileobj.recv_into(buf)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                k = 0
            last = time.monotonic()
            if k:
                counts[key.data] += k
            else:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                closed += 1
    print(json.dumps({"accepted": accepted, "closed": closed, "bytes": [counts[i] for i in sorted(counts)]}),
          flush=True)


def send(host: str, port: int, n: int, secs: float, ca: str) -> None:
    """n MPTCP connections with congestion control ca. Line protocol: prints ``connected`` (all
    n connected, or {"errors": ...}), waits for ``go`` on stdin, sends on all for secs (printing
    ``mid`` at half time and waiting for ``on``), prints {"sent": [...]}, waits for ``close``,
    closes all and prints ``closed``."""
    _nofile(n)
    socks, errors = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ca.encode())
            s.settimeout(30)
            s.connect((host, port))
            s.sendall(b"x" * 1000)     # the client PM adds subflows once the connection is fully established
        except OSError as e:
            errors.append(str(e))
            s.close()
            continue
        s.setblocking(False)
        socks.append(s)
    print(json.dumps({"connected": len(socks), "errors": errors[:5]}), flush=True)
    sys.stdin.readline()                                       # go
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        sel.register(s, selectors.EVENT_WRITE, i)
    sent = [0] * len(socks)
    buf = memoryview(bytearray(CHUNK))
    t0 = time.monotonic()
    mid = False
    while time.monotonic() - t0 < secs:
        if not mid and time.monotonic() - t0 >= secs / 2:
            mid = True
            print("mid", flush=True)
            sys.stdin.readline()                               # on (the parent took its snapshot)
        for key, _ in sel.select(0.2):
            try:
                sent[key.data] += key.fileobj.send(buf)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                errors.append(str(e))
                sel.unregister(key.fileobj)
    print(json.dumps({"sent": sent, "errors": errors[:5]}), flush=True)
    sys.stdin.readline()                                       # close
    for s in socks:
        s.close()
    print("closed", flush=True)


# --- lab --------------------------------------------------------------------------------------
class ScaleLab(netlab.Lab):
    """Clients c2, c3, c4 (k addresses and k − 1 subflow endpoints each) and a server."""
    roles = tuple(f"c{k}" for k in GROUPS) + ("srv",)

    def server(self, k: int) -> str:
        return f"198.18.{10 + k}.2"

    def build(self):
        s = self.ns["srv"]
        self.ip(s, "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "0")
        self.ex(s, "sysctl", "-qw", "net.core.somaxconn=4096")
        for k in GROUPS:
            c, dev = self.ns[f"c{k}"], f"v{k}c"
            self.veth(f"c{k}", dev, "srv", f"v{k}s")
            self.ip(s, "addr", "add", f"{self.server(k)}/24", "dev", f"v{k}s")
            self.ip(c, "mptcp", "limits", "set", "subflows", str(k - 1), "add_addr_accepted", "0")
            for j in range(k):
                addr = f"198.18.{10 + k}.{1 if j == 0 else 10 + j}"
                self.ip(c, "addr", "add", f"{addr}/24", "dev", dev)
                if j:
                    self.ip(c, "mptcp", "endpoint", "add", addr, "dev", dev, "subflow")
            self.ex(c, "sysctl", "-qw", "net.ipv4.ip_local_port_range=20000 60999")


# --- measurements -----------------------------------------------------------------------------
def slab() -> dict[str, tuple[int, int]]:
    """(active objects, bytes in them) per slab cache (/proc/slabinfo: active_objs × objsize)."""
    out = {}
    for ln in Path("/proc/slabinfo").read_text().splitlines()[2:]:
        f = ln.split()
        out[f[0]] = (int(f[1]), int(f[1]) * int(f[3]))
    return out


#: the slab caches of one connection's sockets at both ends (struct mptcp_sock, the subflows'
#: tcp_sock, the socket inodes and files of the two application sockets)
SOCKET_CACHES = ("MPTCP", "TCP", "request_sock_subflow_v4", "request_sock_TCP", "tw_sock_TCP",
                 "sock_inode_cache", "filp", "dentry", "eventpoll_epi")


def meminfo() -> dict[str, int]:
    out = {}
    for ln in Path("/proc/meminfo").read_text().splitlines():
        k, v = ln.split(":", 1)
        out[k] = int(v.split()[0]) * 1024
    return out


def sockstat(lab: ScaleLab, role: str) -> dict[str, int]:
    """TCP line of a namespace's /proc/net/sockstat (inuse, orphan, tw, alloc, mem pages)."""
    txt = lab.ex(lab.ns[role], "cat", "/proc/net/sockstat")
    m = re.search(r"^TCP: (.*)$", txt, re.M)
    f = m.group(1).split() if m else []
    return {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2)}


def sockets(lab: ScaleLab, role: str) -> dict[str, int]:
    """Open MPTCP and TCP sockets of a namespace (exact: /proc/net/protocols ``sockets``)."""
    out = {}
    for ln in lab.ex(lab.ns[role], "cat", "/proc/net/protocols").splitlines():
        f = ln.split()
        if f and f[0] in ("MPTCP", "TCP"):
            out[f[0]] = int(f[2])
    return out


def snapshot(lab: ScaleLab | None = None) -> dict:
    snap = {"slab": slab(), "meminfo": meminfo(), "t": time.monotonic()}
    if lab is not None:
        snap["sockstat"] = {r: sockstat(lab, r) for r in lab.roles}
        snap["sockets"] = {p: sum(sockets(lab, r).get(p, 0) for r in lab.roles) for p in ("MPTCP", "TCP")}
    return snap


def mem_delta(a: dict, b: dict, n: int) -> dict:
    """Memory added from snapshot a to b, per connection (both ends: the client's and the server's
    sockets are on this machine). ``socket_caches``: the caches of SOCKET_CACHES (exact: nothing
    else on the machine allocates thousands of them in seconds); ``kmalloc``: the generic caches
    (subflow contexts, ULP data; shared with everything else, so noisy); ``slab``: all caches;
    ``tcp_mem``: the socket buffers charged to TCP (tcp_memory_allocated, sockstat ``mem``)."""
    caches = set(a["slab"]) | set(b["slab"])
    d = {k: (b["slab"].get(k, (0, 0))[0] - a["slab"].get(k, (0, 0))[0],
             b["slab"].get(k, (0, 0))[1] - a["slab"].get(k, (0, 0))[1]) for k in caches}
    per = lambda v: round(v / max(n, 1))                                    # noqa: E731
    out = {"socket_caches_per_conn": per(sum(d.get(k, (0, 0))[1] for k in SOCKET_CACHES)),
           "objects_per_conn": {k: round(d.get(k, (0, 0))[0] / max(n, 1), 2) for k in ("MPTCP", "TCP")},
           "kmalloc_per_conn": per(sum(v[1] for k, v in d.items() if k.startswith("kmalloc-"))),
           "slab_per_conn": per(sum(v[1] for v in d.values())),
           "meminfo_slab_per_conn": per(b["meminfo"]["Slab"] - a["meminfo"]["Slab"]),
           "memavailable_drop_per_conn": per(a["meminfo"]["MemAvailable"] - b["meminfo"]["MemAvailable"])}
    if "sockets" in b and "sockets" in a:
        cnt = {p: b["sockets"][p] - a["sockets"][p] for p in ("MPTCP", "TCP")}
        size = {p: b["slab"].get(p, (1, 0))[1] // max(b["slab"].get(p, (1, 0))[0], 1) for p in ("MPTCP", "TCP")}
        out["sockets_per_conn"] = {p: round(cnt[p] / max(n, 1), 3) for p in cnt}
        out["socket_structs_per_conn"] = per(sum(cnt[p] * size[p] for p in cnt))
        out["object_size"] = size
    if "sockstat" in b and "sockstat" in a:
        mem = lambda s: max(v.get("mem", 0) for v in s["sockstat"].values())   # noqa: E731 (global)
        out["tcp_mem_per_conn"] = per((mem(b) - mem(a)) * os.sysconf("SC_PAGE_SIZE"))
        out["tcp_inuse"] = {r: v.get("inuse", 0) for r, v in b["sockstat"].items()}
    return out


def subflows(lab: ScaleLab, role: str) -> list[dict]:
    """Established MPTCP subflows of a client: token of their connection, congestion control,
    bytes_acked (from ``ss -tin``)."""
    text = lab.ex(lab.ns[role], "ss", "-tinH", "state", "established")
    rows = []
    for row in netlab.parse_ss(text):
        rows.append(row)
    tokens = re.findall(r"tcp-ulp-mptcp\b.*?token:\w+\(id:\d+\)/(\w+)", text)
    for row, tok in zip(rows, tokens):
        row["token"] = tok
    return [r for r in rows if "token" in r and r["peer"].endswith(f":{PORT}")]


def per_connection(rows: list[dict]) -> dict[str, list[dict]]:
    conns: dict[str, list[dict]] = {}
    for r in rows:
        conns.setdefault(r["token"], []).append(r)
    return conns


def bpf_maps() -> dict[int, dict]:
    out = netlab.sh("bpftool", "-j", "map", "show", check=False)
    return {m["id"]: m for m in json.loads(out or "[]")}



def _readline(p: subprocess.Popen, what: str, timeout: float = 120.0) -> str:
    import select
    r, _, _ = select.select([p.stdout], [], [], timeout)
    if not r:
        raise RuntimeError(f"scale: no '{what}' from {p.args[3]} within {timeout:g} s")
    ln = p.stdout.readline().strip()
    if not ln:
        raise RuntimeError(f"scale: {p.args[3]} ended before '{what}' (exit {p.wait()})")
    return ln


def run(cc: str, conns: int = 1000, secs: float = 10.0, settle_s: float = 30.0) -> dict:
    """One congestion control: connect, measure, send, close, check (see the module docstring)."""
    from mpcc.kernel import bpf
    builtin = cc in BUILTIN
    res = {"cc": cc, "conns": conns, "secs": secs, "kernel": os.uname().release,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    klog, maps0 = netlab.KernelLog(), bpf_maps()
    share = {k: conns // len(GROUPS) + (1 if i < conns % len(GROUPS) else 0) for i, k in enumerate(GROUPS)}
    procs: list[subprocess.Popen] = []
    reg = None
    try:
        reg = None if builtin else bpf.load(cc)
        kname = cc if builtin else reg.kernel_name
        my_id = None if builtin else reg.map_id
        res["kernel_name"] = kname
        mine = {i: m for i, m in bpf_maps().items() if i not in maps0}
        res["bpf_map_bytes"] = sum(int(m.get("bytes_memlock", 0)) for m in mine.values())
        res["bpf_maps"] = sorted({str(m.get("name", "")) for m in mine.values()})
        with ScaleLab() as lab:
            srv = subprocess.Popen(["ip", "netns", "exec", lab.ns["srv"], sys.executable, "-m", "mpcc.lab.scale", "sink",
                                    str(PORT), str(conns), "60"], stdout=subprocess.PIPE, text=True)
            procs.append(srv)
            assert _readline(srv, "ready") == "ready"
            base = snapshot(lab)
            cli = {}
            for k in GROUPS:
                cli[k] = subprocess.Popen(["ip", "netns", "exec", lab.ns[f"c{k}"], sys.executable, "-m", "mpcc.lab.scale", "send",
                                           lab.server(k), str(PORT), str(share[k]), str(secs), kname],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                procs.append(cli[k])
            t_conn = time.monotonic()
            res["connect"] = {k: json.loads(_readline(p, "connected")) for k, p in cli.items()}
            res["connect_s"] = round(time.monotonic() - t_conn, 1)
            # wait until every connection has its k subflows
            want = sum(k * share[k] for k in GROUPS)
            t1 = time.monotonic()
            while True:
                sf = {k: subflows(lab, f"c{k}") for k in GROUPS}
                have = sum(len(v) for v in sf.values())
                if have >= want or time.monotonic() - t1 > settle_s:
                    break
                time.sleep(1.0)
            res["subflows_established"], res["subflows_expected"] = have, want
            res["subflows_settle_s"] = round(time.monotonic() - t1, 1)
            dist = {}
            for k in GROUPS:
                per = per_connection(sf[k])
                dist[k] = {"connections_seen": len(per),
                           "with_k_subflows": sum(1 for v in per.values() if len(v) == k),
                           "subflow_counts": sorted({len(v) for v in per.values()})}
            res["per_group"] = dist
            idle = snapshot(lab)
            res["mem_idle"] = mem_delta(base, idle, conns)
            rtx0 = {k: lab.tcp_counter(f"c{k}", "RetransSegs") for k in GROUPS}
            out0 = {k: lab.tcp_counter(f"c{k}", "OutSegs") for k in GROUPS}
            for p in cli.values():
                p.stdin.write("go\n")
                p.stdin.flush()
            for k, p in cli.items():
                assert _readline(p, "mid", secs + 60) == "mid"
            busy = snapshot(lab)
            sf = {k: subflows(lab, f"c{k}") for k in GROUPS}
            for p in cli.values():
                p.stdin.write("on\n")
                p.stdin.flush()
            res["mem_busy"] = mem_delta(base, busy, conns)
            rows = [r for v in sf.values() for r in v]
            res["busy_subflows"] = len(rows)
            res["busy_ca"] = sorted({r["ca"] for r in rows})
            res["busy_subflows_with_other_ca"] = sum(1 for r in rows if r["ca"] != kname)
            res["busy_subflows_acked_nothing"] = sum(1 for r in rows if r["bytes_acked"] <= 1)
            # per group: connections whose subflows all carried data by mid-run, and idle subflows
            res["busy_per_group"] = {k: {"idle_subflows": sum(1 for r in sf[k] if r["bytes_acked"] <= 1),
                                         "conns_all_subflows_used": sum(
                                             1 for v in per_connection(sf[k]).values()
                                             if all(r["bytes_acked"] > 1 for r in v))} for k in GROUPS}
            sent = {k: json.loads(_readline(p, "sent", secs + 60)) for k, p in cli.items()}
            res["send_errors"] = [e for v in sent.values() for e in v["errors"]][:5]
            res["retrans_segs"] = sum(lab.tcp_counter(f"c{k}", "RetransSegs") - rtx0[k] for k in GROUPS)
            res["out_segs"] = sum(lab.tcp_counter(f"c{k}", "OutSegs") - out0[k] for k in GROUPS)
            res["sent_bytes"] = sum(sum(v["sent"]) for v in sent.values())
            for p in cli.values():
                p.stdin.write("close\n")
                p.stdin.flush()
            for k, p in cli.items():
                _readline(p, "closed", 60)
                p.wait(30)
            got = json.loads(_readline(srv, "result", 90))
            srv.wait(30)
            res["accepted"], res["closed"] = got["accepted"], got["closed"]
            res["conns_without_data"] = sum(1 for b in got["bytes"] if b <= 0) + (conns - len(got["bytes"]))
            res["goodput_mbit_s"] = round(8 * sum(got["bytes"]) / secs / 1e6)
            res["received_min_max_bytes"] = [min(got["bytes"], default=0), max(got["bytes"], default=0)]
            tag = lab.tag
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if reg is not None:
            reg.release()
    # nothing left behind
    t2 = time.monotonic()
    left_maps = lambda: [i for i in mine if i in bpf_maps()]           # noqa: E731
    # by map id: other processes may hold struct_ops of the same name (another worktree's load)
    mine_left = lambda: my_id is not None and my_id in bpf_maps()          # noqa: E731
    while time.monotonic() - t2 < 60 and (mine_left() or left_maps()):
        time.sleep(0.5)
    res["freed_after_s"] = round(time.monotonic() - t2, 1)
    res["struct_ops_left"] = bool(mine_left() and reg is not None and reg.created)
    res["leaked_maps"] = sorted({str(mine[i].get("name", "")) for i in left_maps()}) if reg is not None and reg.created else []
    time.sleep(2.0)
    after = snapshot()
    res["mem_after"] = mem_delta(base, after, conns)
    res["netns_left"] = [n for n in netlab.sh("ip", "netns", "list").split() if n.startswith(tag)]
    res["kernel_log"] = klog.stop()
    res["dmesg_warnings"] = netlab.kernel_log_warnings(res["kernel_log"])
    res["pass"] = bool(
        all(v["connected"] == share[k] and not v["errors"] for k, v in res["connect"].items())
        and res["subflows_established"] == res["subflows_expected"]
        and all(d["with_k_subflows"] == share[k] for k, d in res["per_group"].items())
        and res["accepted"] == conns and res["closed"] == conns and res["conns_without_data"] == 0
        and res["busy_subflows_with_other_ca"] == 0 and not res["send_errors"]
        and not res["struct_ops_left"] and not res["leaked_maps"] and not res["netns_left"]
        and not res["dmesg_warnings"])
    return res


def table(results: list[dict]) -> list[str]:
    kib = lambda b: f"{b / 1024:.1f}"                                       # noqa: E731
    lines = ["| congestion control | connections (with 2/3/4 subflows) | subflows up / expected | connections "
             "that carried data | subflows mid-run: other CC / nothing acked yet | connections using all their subflows "
             "mid-run (2/3/4) | goodput (Mb/s), retransmitted segments | socket objects per "
             "connection, idle: MPTCP, TCP (their size, KiB) | socket caches per connection, idle (KiB) | kmalloc per connection, "
             "idle (KiB) | all slab per connection, idle / sending (KiB) | TCP buffers per connection, sending "
             "(KiB) | BPF maps (KiB per load) | after close: MPTCP, TCP slab objects left per connection | left "
             "behind | pass |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        g, mi, mb, ma = r["per_group"], r["mem_idle"], r["mem_busy"], r["mem_after"]
        lines.append(
            f"| {r['cc']} | {r['conns']} ({'/'.join(str(g[k]['with_k_subflows']) for k in GROUPS)}) | "
            f"{r['subflows_established']} / {r['subflows_expected']} | {r['conns'] - r['conns_without_data']} | "
            f"{r['busy_subflows_with_other_ca']} / {r['busy_subflows_acked_nothing']} | "
            f"{'/'.join(str(r['busy_per_group'][k]['conns_all_subflows_used']) for k in GROUPS)} | "
            f"{r['goodput_mbit_s']}, {100 * r['retrans_segs'] / max(r['out_segs'], 1):.2f} % |"
            " "
            f"{mi['sockets_per_conn']['MPTCP']:.2f}, {mi['sockets_per_conn']['TCP']:.2f} "
            f"({kib(mi['socket_structs_per_conn'])}) | "
            f"{kib(mi['socket_caches_per_conn'])} | {kib(mi['kmalloc_per_conn'])} | "
            f"{kib(mi['slab_per_conn'])} / {kib(mb['slab_per_conn'])} | {kib(mb.get('tcp_mem_per_conn', 0))} | "
            f"{r['bpf_map_bytes'] / 1024:.0f} | "
            f"{ma['objects_per_conn']['MPTCP']:.2f}, {ma['objects_per_conn']['TCP']:.2f} | "
            f"{'none' if not (r['leaked_maps'] or r['struct_ops_left'] or r['netns_left']) else 'YES'}"
            f"{', ' + str(len(r['dmesg_warnings'])) + ' warnings' if r['dmesg_warnings'] else ''} | "
            f"{'yes' if r['pass'] else 'NO'} |")
    return lines


def main(argv=None) -> int:
    if argv is None and netlab.host_role(sink, send):
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ccs", nargs="*", default=["balia", "lia", "olia", "reno", "cubic"])
    ap.add_argument("--conns", type=int, default=1000)
    ap.add_argument("--secs", type=float, default=10.0)
    ap.add_argument("--json", type=Path, help="write the full results here")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("scale: needs root (BPF, network namespaces): run with sudo", file=sys.stderr)
        return 2
    netlab.remove_stale()
    results = []
    for cc in a.ccs:
        r = run(cc, a.conns, a.secs)
        results.append(r)
        print(f"scale: {cc}: {'pass' if r['pass'] else 'FAIL'}: {r['accepted']} accepted, "
              f"{r['subflows_established']}/{r['subflows_expected']} subflows, {r['conns_without_data']} without "
              f"data, idle per conn: {r['mem_idle']['sockets_per_conn']} sockets, socket caches "
              f"{r['mem_idle']['socket_caches_per_conn']} B, slab {r['mem_idle']['slab_per_conn']} B; "
              f"{r['goodput_mbit_s']} Mb/s, load {' '.join(r['loadavg'])}", flush=True)
        if a.json:
            a.json.write_text(json.dumps(results, indent=1) + "\n")
    print("\n".join(table(results)))
    return 0 if all(r["pass"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
