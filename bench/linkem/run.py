"""Benchmark linkem against Debian's vde-wirefilter on the same namespace paths.

    flock /tmp/mpcc-bench.lock sudo .venv/bin/python bench/linkem/run.py [--quick] [--cpu-hogs N] [--tag NAME] [--rates-only]
        → bench/linkem/RESULTS-NAME.md (tables), results-NAME.json (all numbers)

--rates-only re-runs only the forwarding-rate tests into an existing results-NAME.json.
--cpu-hogs N runs N busy loops (normal scheduling) for the whole benchmark: a machine loaded
by other work, the case real-time scheduling is for. NAME defaults to "hogsN" or "run".

Paths: client ns ──(emulator)── server ns, MTU 1500, offloads off, no bandwidth limit.
  linkem:      veth ── relay ns [linkem --in lkc --out lks] ── veth   (the testbed's topology)
  wirefilter:  tap ── vde_switch ── wirefilter ── vde_switch ── tap
Plain paths (no emulator, the baselines): linkem's topology with a kernel bridge in the relay
ns; vde's with `dpipe vde_plug A = vde_plug B` in place of wirefilter.
Emulators: linkem (default: one SCHED_FIFO thread for both directions, receive stamps),
linkem --threads 2 (rate tests only), linkem --no-realtime, vde-wirefilter.
Measures
  1. delay accuracy: RTT of an ICMP echo probe (answered by the server's kernel; receive time
     = kernel SO_TIMESTAMPNS stamp; the probe runs SCHED_FIFO) through a link of one-way delay
     0, 10 and 100 ms, probes 10 ms apart; error = RTT − 2·delay (raw); added = error − the
     plain path's median RTT under the same load (what the emulator adds). Two conditions:
     "idle" (only the probes) and "TCP" (a bulk TCP flow through the same link in the probes'
     direction, paced at 100 Mb/s with SO_MAX_PACING_RATE — testbed-like rates); linkem also
     reports how late it sent every frame (release lateness, all frames);
  2. forwarding rate, 1 ms delay: UDP 1500-byte IP packets from udpflood.py (sendmmsg) at
     1.2 Gb/s one direction, 1.2 Gb/s both directions at once, and unpaced one direction:
     offered, received (far end's interface counters), loss; iperf3 TCP (cubic, unpaced);
  3. CPU: emulator processes' user+system time during each rate test, as % of one core.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from mpcc import scenario  # noqa: E402
from mpcc.testbed import engine, netns, topology  # noqa: E402

PROBE = r"""
# ICMP echo through the path: the server's kernel answers (no user-space echo to schedule);
# send time taken just before sendto, receive time = kernel SO_TIMESTAMPNS stamp.
import os, socket, struct, sys, time
addr, n, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
s.settimeout(2.0)
ident = os.getpid() & 0xFFFF

def csum(b):
    if len(b) % 2:
        b += b"\0"
    x = sum(struct.unpack(f"!{len(b) // 2}H", b))
    x = (x >> 16) + (x & 0xFFFF)
    x += x >> 16
    return ~x & 0xFFFF

out = []
for seq in range(n):
    body = struct.pack("!HH", ident, seq) + bytes(56)
    pkt = struct.pack("!BBH", 8, 0, csum(b"\x08\x00\x00\x00" + body)) + body
    t_send = time.clock_gettime_ns(time.CLOCK_REALTIME)
    s.sendto(pkt, (addr, 0))
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            data, anc, _, _ = s.recvmsg(2048, 64)
        except socket.timeout:
            break
        ihl = (data[0] & 0xF) * 4
        typ, _, _, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
        if typ == 0 and rid == ident and rseq == seq:
            for lvl, t, d in anc:
                if lvl == socket.SOL_SOCKET and t == 35:
                    sec, nsec = struct.unpack("qq", d[:16])
                    out.append((sec * 10**9 + nsec - t_send) / 1e6)
            break
    time.sleep(gap)
print(" ".join(f"{x:.4f}" for x in out))
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except OSError:
            pass
    return total


def percentile(xs, q):
    """Nearest-rank q-quantile."""
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs)) - 1)]


def measure_rtt(client, server, server_addr, n):
    sh(["ip", "netns", "exec", client, sys.executable, "-c", PROBE, server_addr, "5", "0.01"])
    # the probe runs SCHED_FIFO so that its own scheduling delays do not count as path delay
    out = sh(["ip", "netns", "exec", client, "chrt", "-f", "20", sys.executable, "-c", PROBE, server_addr, str(n), "0.01"],
             timeout=900).stdout
    return [float(x) for x in out.split()]


FLOOD = str(Path(__file__).with_name("udpflood.py"))
UDP_RATE = 1200  # Mb/s offered per direction in the paced UDP tests (above the 1 Gb/s target)


def link_counts(ns, dev):
    """(rx_packets, tx_packets) of an interface."""
    st = json.loads(sh(["ip", "-n", ns, "-j", "-s", "link", "show", "dev", dev]).stdout)[0]["stats64"]
    return st["rx"]["packets"], st["tx"]["packets"]


def udp_test(p, secs, rate_mbps, both):
    """1500-byte UDP datagrams client → server (and server → client if `both`) at `rate_mbps`
    each (0 = as fast as the sender can): offered = what the sender sent, received = what
    arrived on the far end's interface, loss = 1 − received / sent into the emulator."""
    flows = [(p.client, p.client_dev, p.server, p.server_dev, p.server_addr)]
    if both:
        flows.append((p.server, p.server_dev, p.client, p.client_dev, p.client_addr))
    sinks = [subprocess.Popen(["ip", "netns", "exec", dst, sys.executable, FLOOD, "sink", "5301", str(secs + 5)])
             for _, _, dst, _, _ in flows]
    time.sleep(0.5)
    before = [(link_counts(src, sd)[1], link_counts(dst, dd)[0]) for src, sd, dst, dd, _ in flows]
    hz = os.sysconf("SC_CLK_TCK")
    c0, t0 = cpu_ticks(p.pids), time.monotonic()
    senders = [subprocess.Popen(["ip", "netns", "exec", src, sys.executable, FLOOD, "send", addr, "5301", str(rate_mbps),
                                str(secs)], stdout=subprocess.PIPE, text=True) for src, _, _, _, addr in flows]
    outs = [json.loads(x.communicate(timeout=secs + 30)[0]) for x in senders]
    c1, t1 = cpu_ticks(p.pids), time.monotonic()
    time.sleep(0.2)  # the last frames leave the 1 ms delay line
    after = [(link_counts(src, sd)[1], link_counts(dst, dd)[0]) for src, sd, dst, dd, _ in flows]
    for x in sinks:
        x.kill()
        x.wait()
    res = {"cpu_pct": (c1 - c0) / hz / (t1 - t0) * 100, "dirs": []}
    for o, (tx0, rx0), (tx1, rx1) in zip(outs, before, after):
        tx, rx = tx1 - tx0, rx1 - rx0
        res["dirs"].append({"offered_mbps": o["offered_mbps"], "received_mbps": rx * 1500 * 8 / o["secs"] / 1e6,
                            "loss_pct": 100 * (1 - rx / tx) if tx else float("nan"), "sent": o["sent"], "tx": tx, "rx": rx})
    return res


def tcp_test(p, secs):
    srv = subprocess.Popen(["ip", "netns", "exec", p.server, "iperf3", "-s", "-1", "-J"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    hz = os.sysconf("SC_CLK_TCK")
    c0, t0 = cpu_ticks(p.pids), time.monotonic()
    cl = sh(["ip", "netns", "exec", p.client, "iperf3", "-c", p.server_addr, "-t", str(secs), "-C", "cubic", "-J"],
            timeout=secs + 30)
    c1, t1 = cpu_ticks(p.pids), time.monotonic()
    srv.communicate(timeout=30)
    tcp = json.loads(cl.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
    return {"tcp_mbps": tcp, "cpu_pct": (c1 - c0) / hz / (t1 - t0) * 100}


def measure_rate(p, secs):
    return {"udp_one": udp_test(p, secs, UDP_RATE, False), "udp_both": udp_test(p, secs, UDP_RATE, True),
            "udp_max": udp_test(p, secs, 0, False), "tcp": tcp_test(p, secs)}


class Path_:
    """One client ─ emulator ─ server path: its namespaces, addresses, devices, emulator pids."""

    def __init__(self, r, client, server, server_addr, client_addr, pids, client_dev, server_dev):
        self.r, self.client, self.server, self.server_addr, self.client_addr = r, client, server, server_addr, client_addr
        self.pids, self.client_dev, self.server_dev = pids, client_dev, server_dev


# --- linkem -------------------------------------------------------------------------------------
def linkem_path(delay_ms, tmp, linkem_args=()):
    s = scenario.loads(f'name = "bench"\nduration_s = 10\n[[links]]\nname = "l"\ncapacity_mbps = 1000000.0\n'
                       f'delay_ms = {delay_ms}\nbuffer_pkts = 1000000\n[[groups]]\nname = "g"\ncount = 1\n'
                       f'algorithm = "reno"\npaths = [["l"]]\n')
    r = netns.Run().open()
    try:
        t = topology.build(s, r, Path(tmp), linkem_args=tuple(linkem_args))
    except BaseException:
        r.close()
        raise
    time.sleep(0.3)
    lp = t.links["l"]
    return Path_(r, t.client_ns, t.server_ns, lp.server_addr, lp.client_addr(0), [p.pid for p in r.procs], topology.host_dev(0), "s0")


def bridge_path(delay_ms, tmp, linkem_args=()):
    """The linkem topology with linkem replaced by a kernel bridge in the relay namespace: the
    path's own overhead (two extra veth hops, the probe's stack), no emulator."""
    p = linkem_path(0, tmp)
    relay = next(n for n in p.r.namespaces if n.endswith("-l0"))
    for proc in p.r.procs:
        proc.terminate()
        proc.wait(timeout=10)
    for cmd in (["link", "add", "br0", "type", "bridge"], ["link", "set", "lkc", "master", "br0"],
                ["link", "set", "lks", "master", "br0"], ["link", "set", "br0", "up"]):
        netns.run(["ip", "-n", relay, *cmd])
    time.sleep(0.3)
    p.pids = []
    return p


# --- vde-wirefilter ------------------------------------------------------------------------------
def vde_path(delay_ms, tmp, linkem_args=()):
    r = netns.Run().open()
    try:
        return _vde_path(r, delay_ms, tmp)
    except BaseException:
        r.close()
        raise


def vdeplug_path(delay_ms, tmp, linkem_args=()):
    """The vde topology with wirefilter replaced by a plain pipe between the two switches
    (`dpipe vde_plug A = vde_plug B`): the path's own overhead, no emulator."""
    r = netns.Run().open()
    try:
        return _vde_path(r, delay_ms, tmp, plain=True)
    except BaseException:
        r.close()
        raise


def _vde_path(r, delay_ms, tmp, plain=False):
    c, s = r.add_netns("c"), r.add_netns("s")
    procs = []
    socks = {}
    for ns, name, addr in ((c, "a", "198.18.0.1"), (s, "b", "198.18.0.2")):
        sock = Path(tmp) / f"sw{name}"
        socks[name] = sock
        # stdin stays open: vde_switch exits on EOF of its console
        p = r.spawn(["vde_switch", "-s", str(sock), "-t", "tap0"], ns, stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p.pid)
    time.sleep(0.5)
    for ns, addr in ((c, "198.18.0.1"), (s, "198.18.0.2")):
        netns.run(["ip", "-n", ns, "link", "set", "dev", "lo", "up"])
        netns.run(["ethtool", "-K", "tap0", "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off"], ns=ns, check=False)
        netns.run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "tap0"])
        netns.run(["ip", "-n", ns, "link", "set", "dev", "tap0", "up"])
        netns.run(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], ns=ns)
    args = ["wirefilter", "-v", f"{socks['a']}:{socks['b']}"]
    if delay_ms > 0:
        args += ["-d", str(delay_ms)]
    if plain:
        args = ["dpipe", "vde_plug", str(socks["a"]), "=", "vde_plug", str(socks["b"])]
    # wirefilter needs no network namespace (it only talks to the switches' unix sockets)
    p = r.spawn(args, c, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p.pid)
    time.sleep(0.5)
    # static neighbours as in the testbed
    for ns, peer_ns, addr in ((c, s, "198.18.0.2"), (s, c, "198.18.0.1")):
        mac = json.loads(netns.run(["ip", "-n", peer_ns, "-j", "link", "show", "dev", "tap0"]).stdout)[0]["address"]
        netns.run(["ip", "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", "tap0", "nud", "permanent"])
    if plain:  # dpipe's two vde_plug children do the work
        kids = sh(["pgrep", "-P", str(p.pid)]).stdout.split()
        procs += [int(k) for k in kids]
    return Path_(r, c, s, "198.18.0.2", "198.18.0.1", procs, "tap0", "tap0")


LOAD_PACING = "100M"


def start_tcp_load(client, server, addr, secs):
    """A bulk TCP flow client → server (the probes' forward direction), paced at LOAD_PACING."""
    srv = subprocess.Popen(["ip", "netns", "exec", server, "iperf3", "-s", "-1", "-J"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    cl = subprocess.Popen(["ip", "netns", "exec", client, "iperf3", "-c", addr, "-t", str(secs), "-C", "cubic",
                           "--fq-rate", LOAD_PACING, "-J"], stdout=subprocess.PIPE, text=True)
    return srv, cl


def stop_tcp_load(srv, cl, secs):
    out = cl.communicate(timeout=secs + 60)[0]
    srv.communicate(timeout=30)
    try:
        return json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
    except (ValueError, KeyError):
        return float("nan")


# (name, path builder, extra linkem args, baseline path, delay cells?) — "linkem --threads 2"
# (one real-time thread per direction, the previous default) only in the rate tests
EMULATORS = (("linkem", linkem_path, (), "kernel bridge", True),
             ("linkem --threads 2", linkem_path, ("--threads", "2"), "kernel bridge", False),
             ("linkem --no-realtime", linkem_path, ("--no-realtime",), "kernel bridge", True),
             ("vde-wirefilter", vde_path, (), "vde_plug pipe", True))
# the same topologies without an emulator: the path's own overhead, subtracted from the RTT
BASELINES = (("kernel bridge", bridge_path), ("vde_plug pipe", vdeplug_path))
DELAYS = (0, 10, 100)
CONDITIONS = ("idle", "TCP")


def _opt(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    quick = "--quick" in sys.argv
    hogs_n = int(_opt("--cpu-hogs", 0))
    tag = _opt("--tag", f"hogs{hogs_n}" if hogs_n else "run")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs_n)]
    try:
        bench(quick, hogs_n, tag)
    finally:
        for h in hogs:
            h.kill()


def probe_cell(build, args, delay, cond, n_probe):
    """RTTs of n_probe ICMP echoes through a fresh path of one-way delay `delay`, with or
    without the TCP load; linkem's timing report if there is one."""
    with tempfile.TemporaryDirectory(prefix="mpcc-bench-") as tmp:
        p = build(delay, tmp, args)
        tcp = None
        try:
            if cond == "TCP":
                # long enough to cover the probes: n × (RTT + 10 ms gap) + warm-up
                load_s = math.ceil(1.15 * n_probe * (2 * delay / 1000 + 0.012)) + 6
                srv, cl = start_tcp_load(p.client, p.server, p.server_addr, load_s)
                time.sleep(2.0 + 20 * delay / 1000)  # slow start up to the pacing rate
            c0, t0 = cpu_ticks(p.pids), time.monotonic()
            rtts = measure_rtt(p.client, p.server, p.server_addr, n_probe)
            cpu = (cpu_ticks(p.pids) - c0) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0) * 100
            if cond == "TCP":
                tcp = stop_tcp_load(srv, cl, load_s)
        finally:
            p.r.close()
        timing_file = Path(tmp) / "linkem-0-timing.json"
        timing = json.loads(timing_file.read_text()) if timing_file.exists() else None
    return rtts, tcp, timing, cpu


def summary(xs):
    return {"median_ms": statistics.median(xs), "p99_ms": percentile(xs, 0.99), "max_ms": max(xs)}


def load_rows(tag):
    raw = json.loads(Path(__file__).with_name(f"results-{tag}.json").read_text())
    return {(tuple(int(x) if x.isdigit() else x for x in k.split("|")) if "|" in k else k): v for k, v in raw.items()}


def bench(quick, hogs_n, tag):
    n_probe = 100 if quick else 300
    secs = 3 if quick else 5
    rates_only = "--rates-only" in sys.argv  # re-run only the rate tests into an existing results-TAG.json
    netns.check_environment()
    engine._terminate_cleanly()  # SIGTERM unwinds through the finally blocks
    topology.linkem_binary()
    for tool in ("iperf3", "wirefilter", "vde_switch", "dpipe", "vde_plug"):
        if shutil.which(tool) is None:
            sys.exit(f"bench needs {tool}: apt-get install iperf3 vde2")
    netns.cleanup_stale()
    rows = {"loadavg_start": os.getloadavg(), "n_probe": n_probe, "secs": secs, "cpu_hogs": hogs_n,
            "date": time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
    if rates_only:
        rows = load_rows(tag)
        rows["rates_date"] = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
        rows["rates_loadavg_start"] = os.getloadavg()
    for base, build in BASELINES if not rates_only else ():
        for cond in CONDITIONS:
            rtts, tcp, _, _ = probe_cell(build, (), 0, cond, n_probe)
            rows[(base, cond)] = {"n": len(rtts), **summary(rtts), "lost": n_probe - len(rtts), "tcp_mbps": tcp,
                                  "loadavg": os.getloadavg()[0], "rtt_ms": rtts}
            print(base, cond, {k: v for k, v in rows[(base, cond)].items() if k != "rtt_ms"}, flush=True)
    for emu, build, args, base, cells in EMULATORS:
        for cond in CONDITIONS if cells and not rates_only else ():
            for delay in DELAYS:
                rtts, tcp, timing, cpu = probe_cell(build, args, delay, cond, n_probe)
                err = [x - 2 * delay for x in rtts]
                # added = what the emulator adds to the path: error − the plain path's median RTT
                # under the same load
                b = rows[(base, cond)]["median_ms"]
                added = [e - b for e in err]
                row = {"n": len(rtts), **summary(err), "lost": n_probe - len(rtts), "tcp_mbps": tcp,
                       "loadavg": os.getloadavg()[0], "err_ms": err, "baseline": base, "baseline_median_ms": b,
                       "added_median_ms": statistics.median(added), "added_p99_ms": percentile(added, 0.99),
                       "added_max_ms": max(added), "added_le_0_1": sum(abs(x) <= 0.1 for x in added) / len(added),
                       "cpu_pct": cpu}
                if timing:
                    row["timing"] = timing
                rows[(emu, cond, delay)] = row
                print(emu, cond, delay, {k: v for k, v in row.items() if k != "err_ms"}, flush=True)
        with tempfile.TemporaryDirectory(prefix="mpcc-bench-") as tmp:
            p = build(1, tmp, args)
            try:
                rows[(emu, "rate")] = measure_rate(p, secs)
            finally:
                p.r.close()
        print(emu, "rate", rows[(emu, "rate")], flush=True)
    rows["rates_loadavg_end" if rates_only else "loadavg_end"] = os.getloadavg()
    write_results(rows, tag)


def write_results(rows, tag):
    n_probe, secs = rows["n_probe"], rows["secs"]
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    lines = [
        "# linkem vs vde-wirefilter",
        "",
        f"Machine: {os.cpu_count()} vCPU ({cpu}), Linux {platform.release()}; "
        f"date {rows['date']}. Load average {rows['loadavg_start'][0]:.1f} at the start, "
        f"{rows['loadavg_end'][0]:.1f} at the end; {rows['cpu_hogs']} extra busy loops (`--cpu-hogs`) ran throughout.",
        f"Command: `flock /tmp/mpcc-bench.lock sudo .venv/bin/python bench/linkem/run.py"
        f"{' --cpu-hogs ' + str(rows['cpu_hogs']) if rows['cpu_hogs'] else ''} --tag {tag}` ({n_probe} probes per "
        f"delay and condition, {secs} s per rate test).",
        "",
        "## Delay accuracy (ICMP echo RTT, ms)",
        "",
        "*Plain path* = the same topology without an emulator (linkem's: the relay namespace bridges",
        "its two veths in the kernel; vde's: `dpipe vde_plug A = vde_plug B` instead of wirefilter): its",
        "RTT is the path's own overhead (veth/tap hops, the probe's stack). *error* = RTT − 2·delay (the",
        "raw measure, contains that overhead); *added* = RTT − 2·delay − the plain path's median RTT under",
        "the same load: what the emulator adds. *TCP* = a bulk TCP flow through the same link in the",
        f"probes' direction, paced at {LOAD_PACING}b/s. *release late* = linkem's own measure, over every frame it",
        "forwarded in both directions (probes and TCP): send time − scheduled release (p50 / p99 / max, µs).",
        "",
        "| plain path | load | probes | RTT median | RTT p99 | RTT max | p99 − median (the noise floor of *added p99*) | TCP Mb/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for base, _ in BASELINES:
        for cond in CONDITIONS:
            v = rows[(base, cond)]
            tcp = f"{v['tcp_mbps']:.0f}" if v.get("tcp_mbps") is not None else "—"
            lines.append(f"| {base} | {cond} | {v['n']} | {v['median_ms']:.3f} | {v['p99_ms']:.3f} | {v['max_ms']:.3f} | "
                         f"{v['p99_ms'] - v['median_ms']:.3f} | {tcp} |")
    lines += [
        "",
        "| emulator | load | delay | probes | added median | added p99 | added max | \\|added\\| ≤ 0.1 ms "
        "| error median | error p99 | error max | TCP Mb/s | load avg | emulator CPU | release late p50/p99/max µs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for emu, _, _, _, cells in EMULATORS:
        for cond in CONDITIONS if cells else ():
            for d in DELAYS:
                v = rows[(emu, cond, d)]
                tcp = f"{v['tcp_mbps']:.0f}" if v.get("tcp_mbps") is not None else "—"
                late = "—"
                if "timing" in v:
                    f, r = v["timing"]["fwd"]["release_late"], v["timing"]["rev"]["release_late"]
                    w = f if f["p99_us"] >= r["p99_us"] else r
                    late = f"{w['p50_us']:.0f} / {w['p99_us']:.0f} / {max(f['max_us'], r['max_us']):.0f}"
                lines.append(f"| {emu} | {cond} | {d} ms | {v['n']} | {v['added_median_ms']:.3f} | {v['added_p99_ms']:.3f} | "
                             f"{v['added_max_ms']:.3f} | {100 * v['added_le_0_1']:.0f} % | {v['median_ms']:.3f} | "
                             f"{v['p99_ms']:.3f} | {v['max_ms']:.3f} | {tcp} | {v['loadavg']:.1f} | {v['cpu_pct']:.0f} % | {late} |")
    lines += ["", "## Forwarding rate (no bandwidth limit, 1 ms delay, 1500-byte IP packets)", ""]
    if "rates_date" in rows:
        lines += [f"Re-run on its own (`--rates-only --tag {tag}`) at {rows['rates_date']}, load average "
                  f"{rows['rates_loadavg_start'][0]:.1f} → {rows['rates_loadavg_end'][0]:.1f}.", ""]
    lines += [
              f"UDP: `udpflood.py` (sendmmsg, 1472-byte payloads) paced at {UDP_RATE} Mb/s per direction — one direction, then",
              "both at once — and unpaced (*max*, one direction); received = packets on the far end's interface;",
              "loss = 1 − received / sent into the emulator. TCP: iperf3, cubic, unpaced, one direction.",
              "CPU = the emulator's processes (linkem; wirefilter or both vde_switch) over the test, % of one core.", "",
              f"| emulator | UDP {UDP_RATE} one way: offered → received Mb/s, loss, CPU | UDP {UDP_RATE} both ways: "
              "fwd; rev (offered → received, loss), CPU | UDP max one way: offered → received, loss, CPU | TCP Mb/s, CPU |",
              "|---|---|---|---|---|"]

    def d(x):
        return f"{x['offered_mbps']:.0f} → {x['received_mbps']:.0f}, {x['loss_pct']:.1f} %"

    for emu, *_ in EMULATORS:
        v = rows[(emu, "rate")]
        one, both, mx, t = v["udp_one"], v["udp_both"], v["udp_max"], v["tcp"]
        lines.append(f"| {emu} | {d(one['dirs'][0])}, {one['cpu_pct']:.0f} % | {d(both['dirs'][0])}; {d(both['dirs'][1])}, "
                     f"{both['cpu_pct']:.0f} % | {d(mx['dirs'][0])}, {mx['cpu_pct']:.0f} % | {t['tcp_mbps']:.0f}, {t['cpu_pct']:.0f} % |")
    lines += [""]
    out = Path(__file__).with_name(f"RESULTS-{tag}.md")
    out.write_text("\n".join(lines))
    (Path(__file__).with_name(f"results-{tag}.json")).write_text(
        json.dumps({("|".join(map(str, k)) if isinstance(k, tuple) else k): v for k, v in rows.items()}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
