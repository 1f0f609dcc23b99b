"""Subflow churn soak (issue 15 item 2; root): N MPTCP connections over three rate-limited paths while,
every second, the server's endpoint of path 2 is removed or re-added (REMOVE_ADDR / ADD_ADDR to every
connection) and path 3's link is taken down or brought back up. Checks:

* no new kernel warning in dmesg (WARNING, BUG, oops, refcount, lockdep, RCU stall);
* nothing leaked: after unload the struct_ops and every map the load created are gone (the
  programs keep per-connection state in the socket's CA area, so a leak would be a map or the
  struct_ops itself), and the namespaces are removed;
* every connection progresses: bytes received per connection in each 10 s window > 0.

    flock /tmp/mpcc-bench.lock python bench/kernel/churn.py [--conns 100] [--secs 600] [ALGO ...]
    (--json FILE: the full result; the short CI run is tests/kernel/test_churn.py)

Internally the same file is the traffic: ``churn.py sink PORT N`` (server: per-connection byte
counts, one JSON line a second) and ``churn.py send HOST PORT N SECS CA`` (client threads).
"""

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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import netlab  # noqa: E402

IPPROTO_MPTCP = 262
PORT = 5301
WINDOW_S = 10
WARN_RE = re.compile(r"WARNING:|BUG:|Oops|general protection|rcu_sched detected|rcu: INFO|"
                     r"possible circular locking|refcount_t:|list_add corruption|list_del corruption")


# --- traffic (run inside the namespaces) ------------------------------------------------------
def sink(port: int, n: int, secs: float) -> None:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(n)
    ls.settimeout(120)
    counts, done = [0] * n, [False] * n
    print("ready", flush=True)

    def serve(i, c):
        buf = bytearray(1 << 16)
        while True:
            try:
                k = c.recv_into(buf)
            except OSError:          # a connection silent past the timeout: stalled, counted as such
                break
            if not k:
                break
            counts[i] += k
        done[i] = True
        c.close()

    def accept():
        for i in range(n):
            c, _ = ls.accept()
            c.settimeout(120)
            threading.Thread(target=serve, args=(i, c), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    t0 = time.monotonic()
    while not all(done) and time.monotonic() - t0 < secs + 30:
        time.sleep(1.0)
        print(json.dumps({"t": round(time.monotonic() - t0, 2), "bytes": counts}), flush=True)
    print(json.dumps({"t": round(time.monotonic() - t0, 2), "bytes": counts, "end": True}), flush=True)


def send(host: str, port: int, n: int, secs: float, ca: str) -> None:
    stop = time.monotonic() + secs
    buf = memoryview(bytearray(1 << 16))
    errors = []

    def run():
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
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


# --- lab --------------------------------------------------------------------------------------
class ThreePaths(netlab.Lab):
    roles = ("cli", "srv")
    server = "198.18.1.2"

    def __init__(self, rate_mbit: float):
        super().__init__()
        self.rate_mbit = rate_mbit

    def build(self):
        c, s = self.ns["cli"], self.ns["srv"]
        for i in (1, 2, 3):
            self.veth("cli", f"p{i}c", "srv", f"p{i}s")
            self.ip(c, "addr", "add", f"198.18.{i}.1/24", "dev", f"p{i}c")
            self.ip(s, "addr", "add", f"198.18.{i}.2/24", "dev", f"p{i}s")
            self.ex(c, "tc", "qdisc", "add", "dev", f"p{i}c", "root", "tbf", "rate", f"{self.rate_mbit}mbit",
                    "burst", "15000", "limit", "150000")
        for n in (c, s):
            self.ip(n, "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8")
        for i in (2, 3):
            self.endpoint(True, i)

    def endpoint(self, add: bool, i: int) -> bool:
        """Add (signal) or remove the server's endpoint of path i. False if the kernel refused it
        (the refusal's text is kept in self.refusals). The kernel picks the id on each add."""
        s, addr = self.ns["srv"], f"198.18.{i}.2"
        if add:
            cmd = ["mptcp", "endpoint", "add", addr, "dev", f"p{i}s", "signal"]
        else:
            shown = subprocess.run(["ip", "-n", s, "mptcp", "endpoint", "show"], capture_output=True, text=True).stdout
            m = re.search(rf"^{re.escape(addr)} id (\d+)", shown, re.M)
            if not m:
                return False
            cmd = ["mptcp", "endpoint", "del", "id", m.group(1)]
        p = subprocess.run(["ip", "-n", s, *cmd], capture_output=True, text=True)
        if p.returncode != 0:
            self.refusals = getattr(self, "refusals", []) + [p.stderr.strip()]
        return p.returncode == 0

    def link(self, up: bool, i: int):
        self.ip(self.ns["cli"], "link", "set", f"p{i}c", "up" if up else "down")


# --- checks -----------------------------------------------------------------------------------
def dmesg_lines() -> list[str]:
    return subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()


def maps() -> dict[int, str]:
    out = subprocess.run(["bpftool", "-j", "map", "list"], capture_output=True, text=True).stdout
    return {m["id"]: m.get("name", "") for m in json.loads(out or "[]")}


def orphans() -> int:
    """Orphaned TCP sockets (closed by their process, still in the kernel), /proc/net/sockstat."""
    m = re.search(r"orphan (\d+)", Path("/proc/net/sockstat").read_text())
    return int(m.group(1)) if m else -1


def windows(samples: list[dict], n: int, secs: float) -> list[list[int]]:
    """Bytes per connection in each whole WINDOW_S window of the run (from the per-second samples)."""
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


def run(algo: str, conns: int, secs: float, rate_mbit: float = 20.0) -> dict:
    from mpcc.testbed import bpf
    kname = bpf.kernel_name(algo)
    d0, m0 = len(dmesg_lines()), maps()
    res = {"algorithm": algo, "kernel_name": kname, "conns": conns, "secs": secs, "rate_mbit": rate_mbit,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kernel": os.uname().release}
    events = {"endpoint_add": 0, "endpoint_del": 0, "endpoint_refused": 0, "link_down": 0, "link_up": 0}
    with bpf.load(algo) as reg, ThreePaths(rate_mbit) as lab:
        m_loaded = {i: n for i, n in maps().items() if i not in m0}
        res["created_by_load"] = sorted(set(m_loaded.values()))
        srv = subprocess.Popen(["ip", "netns", "exec", lab.ns["srv"], sys.executable, __file__, "sink", str(PORT),
                                str(conns), str(secs)], stdout=subprocess.PIPE, text=True)
        try:
            assert srv.stdout.readline().strip() == "ready"
            cli = subprocess.Popen(["ip", "netns", "exec", lab.ns["cli"], sys.executable, __file__, "send",
                                    lab.server, str(PORT), str(conns), str(secs), reg.kernel_name],
                                   stdout=subprocess.PIPE, text=True)
            samples = []
            reader = threading.Thread(target=lambda: [samples.append(json.loads(ln)) for ln in srv.stdout
                                                      if ln.startswith("{")], daemon=True)
            reader.start()
            ep2, link3, t0, k = True, True, time.monotonic(), 0
            while cli.poll() is None:
                k += 1
                time.sleep(max(0.0, t0 + k - time.monotonic()))
                if time.monotonic() - t0 > secs:
                    break
                if lab.endpoint(not ep2, 2):
                    ep2 = not ep2
                    events["endpoint_add" if ep2 else "endpoint_del"] += 1
                else:
                    events["endpoint_refused"] += 1
                link3 = not link3
                lab.link(link3, 3)
                events["link_up" if link3 else "link_down"] += 1
            if not link3:            # let every subflow finish its close over a working path
                lab.link(True, 3)
            res["client"] = json.loads(cli.communicate(timeout=secs + 60)[0].strip().splitlines()[-1])
            srv.wait(timeout=60)
            reader.join(timeout=5)
        finally:
            for p in (srv,):
                if p.poll() is None:
                    p.kill()
    res["events"] = events
    res["endpoint_refusals"] = sorted(set(getattr(lab, "refusals", [])))[:5]
    win = windows(samples, conns, secs)
    res["windows"] = len(win) * conns
    res["stalled_windows"] = [{"conn": i, "window": w} for w, row in enumerate(win) for i, b in enumerate(row) if b <= 0]
    res["total_mbit_s"] = round(8 * sum(samples[-1]["bytes"]) / secs / 1e6, 1) if samples else 0.0
    # leaks: after release the struct_ops and the maps its load created must go (the kernel frees
    # them when the last socket that used the ops is gone: wait up to 60 s). Only meaningful if
    # this run registered it and nobody else holds it on this shared machine.
    others = [st for st in bpf.status() if st.kernel_name == kname and (st.holders or st.persistent)]
    if not reg.created or others:
        res["leak_check"] = "skipped: the registration is shared with another process"
        res["leaked_maps"], res["struct_ops_left"] = [], False
    else:
        t1 = time.monotonic()
        while time.monotonic() - t1 < 60 and (kname in bpf.struct_ops_maps() or set(m_loaded) & set(maps())):
            time.sleep(0.5)
        res["freed_after_s"] = round(time.monotonic() - t1, 1)
        res["leaked_maps"] = sorted({m_loaded[i] for i in set(m_loaded) & set(maps())})
        res["struct_ops_left"] = kname in bpf.struct_ops_maps()
        # what still holds it: subflows orphaned by the namespace's deletion keep their congestion
        # control until they time out (FIN retransmissions over a path that was down) — slow, not a leak
        res["orphan_sockets"] = orphans()
    res["netns_left"] = [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
                         .stdout.split() if n.startswith(lab.tag)]
    res["dmesg_warnings"] = [ln for ln in dmesg_lines()[d0:] if WARN_RE.search(ln)][:20]
    res["pass"] = not (res["stalled_windows"] or res["leaked_maps"] or res["struct_ops_left"]
                       or res["netns_left"] or res["dmesg_warnings"] or res["client"]["errors"])
    return res


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] in ("sink", "send"):
        if sys.argv[1] == "sink":
            sink(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
        else:
            send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("algorithms", nargs="*", default=["balia", "lia", "olia"])
    ap.add_argument("--conns", type=int, default=100)
    ap.add_argument("--secs", type=float, default=600.0)
    ap.add_argument("--rate", type=float, default=20.0, help="Mbit/s per path (tbf at the client)")
    ap.add_argument("--json", type=Path, help="write the results here")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("churn: needs root (BPF, network namespaces): run with sudo", file=sys.stderr)
        return 2
    os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    sys.path.insert(0, str(HERE.parents[1] / "python"))
    results = []
    for algo in a.algorithms:
        r = run(algo, a.conns, a.secs, a.rate)
        results.append(r)
        print(f"churn: {algo}: {'pass' if r['pass'] else 'FAIL'}: {len(r['stalled_windows'])}/{r['windows']} "
              f"stalled windows, {len(r['dmesg_warnings'])} warnings, leaked maps {r['leaked_maps']}, "
              f"{r['events']}, {r['total_mbit_s']} Mbit/s", flush=True)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["pass"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
