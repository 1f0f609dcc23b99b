"""Benchmark linkem against Debian's vde-wirefilter on the same namespace paths.

    flock /tmp/mpcc-bench.lock sudo .venv/bin/python bench/linkem/run.py [--quick] [--cpu-hogs N] [--tag NAME]
        → bench/linkem/RESULTS-NAME.md (tables), results-NAME.json (all numbers)

--cpu-hogs N runs N busy loops (normal scheduling) for the whole benchmark: a machine loaded
by other work, the case real-time scheduling is for. NAME defaults to "hogsN" or "run".

Paths: client ns ──(emulator)── server ns, MTU 1500, offloads off, no bandwidth limit.
  linkem:      veth ── relay ns [linkem --in lkc --out lks] ── veth   (the testbed's topology)
  wirefilter:  tap ── vde_switch ── wirefilter ── vde_switch ── tap
Emulators: linkem (default: SCHED_FIFO + receive stamps), linkem --no-realtime, vde-wirefilter.
Measures
  1. delay accuracy: RTT of an ICMP echo probe (answered by the server's kernel; receive time
     = kernel SO_TIMESTAMPNS stamp; the probe runs SCHED_FIFO) through a link of one-way delay
     0, 10 and 100 ms, probes 10 ms apart; error = RTT − 2·delay; the 0 ms row is the path's own
     overhead, so the error the emulator ADDS to a delay d is error(d) − median error(0).
     Two conditions: "idle" (only the probes) and "TCP" (a bulk TCP flow through the same link
     in the probes' direction, paced at 100 Mb/s with SO_MAX_PACING_RATE — testbed-like rates);
     linkem also reports how late it sent every frame (release lateness, all frames);
  2. forwarding rate: iperf3 UDP, 1472-byte payload (1500-byte IP packets), offered 2 Gb/s,
     one direction, 1 ms delay: received rate and loss; iperf3 TCP (cubic, unpaced);
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


def measure_rate(client, server, server_addr, pids, secs):
    srv = subprocess.Popen(["ip", "netns", "exec", server, "iperf3", "-s", "-1", "-J"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    hz = os.sysconf("SC_CLK_TCK")
    c0, t0 = cpu_ticks(pids), time.monotonic()
    cl = sh(["ip", "netns", "exec", client, "iperf3", "-c", server_addr, "-u", "-b", "2G", "-l", "1472", "-t", str(secs), "-w", "4M", "-J"],
            timeout=secs + 30)
    c1, t1 = cpu_ticks(pids), time.monotonic()
    srv_out = srv.communicate(timeout=30)[0]
    end = json.loads(srv_out)["end"]
    res = end.get("sum_received") or end["sum"]  # iperf3 ≥ 3.12 reports the receiver in sum_received
    sent = json.loads(cl.stdout)["end"]["sum"]
    cpu = (c1 - c0) / hz / (t1 - t0) * 100
    udp = {"offered_mbps": sent["bits_per_second"] / 1e6, "received_mbps": res["bits_per_second"] / 1e6,
           "loss_pct": res.get("lost_percent", 0.0), "pps": res["bits_per_second"] / 8 / 1500, "cpu_pct": cpu}
    srv = subprocess.Popen(["ip", "netns", "exec", server, "iperf3", "-s", "-1", "-J"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    c0, t0 = cpu_ticks(pids), time.monotonic()
    cl = sh(["ip", "netns", "exec", client, "iperf3", "-c", server_addr, "-t", str(secs), "-C", "cubic", "-J"], timeout=secs + 30)
    c1, t1 = cpu_ticks(pids), time.monotonic()
    srv.communicate(timeout=30)
    tcp = json.loads(cl.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
    return udp, {"tcp_mbps": tcp, "cpu_pct": (c1 - c0) / hz / (t1 - t0) * 100}


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
    return r, t.client_ns, t.server_ns, t.links["l"].server_addr, [p.pid for p in r.procs]


# --- vde-wirefilter ------------------------------------------------------------------------------
def vde_path(delay_ms, tmp, linkem_args=()):
    r = netns.Run().open()
    try:
        return _vde_path(r, delay_ms, tmp)
    except BaseException:
        r.close()
        raise


def _vde_path(r, delay_ms, tmp):
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
    # wirefilter needs no network namespace (it only talks to the switches' unix sockets)
    p = r.spawn(args, c, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p.pid)
    time.sleep(0.5)
    # static neighbours as in the testbed
    for ns, peer_ns, addr in ((c, s, "198.18.0.2"), (s, c, "198.18.0.1")):
        mac = json.loads(netns.run(["ip", "-n", peer_ns, "-j", "link", "show", "dev", "tap0"]).stdout)[0]["address"]
        netns.run(["ip", "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", "tap0", "nud", "permanent"])
    return r, c, s, "198.18.0.2", procs


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


EMULATORS = (("linkem", linkem_path, ()), ("linkem --no-realtime", linkem_path, ("--no-realtime",)),
             ("vde-wirefilter", vde_path, ()))
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


def bench(quick, hogs_n, tag):
    n_probe = 100 if quick else 300
    secs = 3 if quick else 5
    netns.check_environment()
    engine._terminate_cleanly()  # SIGTERM unwinds through the finally blocks
    topology.linkem_binary()
    for tool in ("iperf3", "wirefilter", "vde_switch"):
        if shutil.which(tool) is None:
            sys.exit(f"bench needs {tool}: apt-get install iperf3 vde2")
    netns.cleanup_stale()
    rows = {"loadavg_start": os.getloadavg(), "n_probe": n_probe, "secs": secs, "cpu_hogs": hogs_n,
            "date": time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
    for emu, build, args in EMULATORS:
        for cond in CONDITIONS:
            for delay in DELAYS:
                with tempfile.TemporaryDirectory(prefix="mpcc-bench-") as tmp:
                    r, c, s, addr, pids = build(delay, tmp, args)
                    tcp = None
                    try:
                        if cond == "TCP":
                            # long enough to cover the probes: n × (RTT + 10 ms gap) + warm-up
                            load_s = math.ceil(1.15 * n_probe * (2 * delay / 1000 + 0.012)) + 6
                            srv, cl = start_tcp_load(c, s, addr, load_s)
                            time.sleep(2.0 + 20 * delay / 1000)  # slow start up to the pacing rate
                        rtts = measure_rtt(c, s, addr, n_probe)
                        if cond == "TCP":
                            tcp = stop_tcp_load(srv, cl, load_s)
                    finally:
                        r.close()
                    timing_file = Path(tmp) / "linkem-0-timing.json"
                    timing = json.loads(timing_file.read_text()) if timing_file.exists() else None
                err = [x - 2 * delay for x in rtts]
                row = {"n": len(rtts), "median_ms": statistics.median(err), "p99_ms": percentile(err, 0.99),
                       "max_ms": max(err), "lost": n_probe - len(rtts), "tcp_mbps": tcp, "loadavg": os.getloadavg()[0],
                       "err_ms": err}
                if delay:
                    base = rows[(emu, cond, 0)]["median_ms"]
                    added = [e - base for e in err]
                    row.update(added_median_ms=statistics.median(added), added_p99_ms=percentile(added, 0.99),
                               added_max_ms=max(added), added_le_0_1=sum(abs(a) <= 0.1 for a in added) / len(added))
                if timing:
                    row["timing"] = timing
                rows[(emu, cond, delay)] = row
                print(emu, cond, delay, {k: v for k, v in row.items() if k != "err_ms"}, flush=True)
        with tempfile.TemporaryDirectory(prefix="mpcc-bench-") as tmp:
            r, c, s, addr, pids = build(1, tmp, args)
            try:
                udp, tcp = measure_rate(c, s, addr, pids, secs)
            finally:
                r.close()
        rows[(emu, "rate")] = {"udp": udp, "tcp": tcp}
        print(emu, "rate", rows[(emu, "rate")], flush=True)
    rows["loadavg_end"] = os.getloadavg()
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
        "## Delay accuracy (ICMP echo RTT − 2 × one-way delay, ms)",
        "",
        "*error* = RTT − 2·delay. The 0 ms row is the path's own overhead (veths/taps, two passes",
        "through the emulator, the probe); *added* = error − the 0 ms row's median: the error the",
        "emulator adds to a configured delay (it understates linkem's error when the 0 ms row is inflated by",
        "wake-up latency, which a release at arrival + 0 cannot hide: negative values; see *error*).",
        "*TCP* = a bulk TCP flow through the same link in the",
        f"probes' direction, paced at {LOAD_PACING}b/s. *release late* = linkem's own measure, over every frame it",
        "forwarded in both directions (probes and TCP): send time − scheduled release (p50 / p99 / max, µs).",
        "",
        "| emulator | load | delay | probes | median error | p99 error | max error | added median | added p99 | added max "
        "| \\|added\\| ≤ 0.1 ms | TCP Mb/s | load avg | release late p50/p99/max µs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for emu, _, _ in EMULATORS:
        for cond in CONDITIONS:
            for d in DELAYS:
                v = rows[(emu, cond, d)]
                added = (f"{v['added_median_ms']:.3f} | {v['added_p99_ms']:.3f} | {v['added_max_ms']:.3f} | "
                         f"{100 * v['added_le_0_1']:.0f} %") if d else "— | — | — | —"
                tcp = f"{v['tcp_mbps']:.0f}" if v.get("tcp_mbps") is not None else "—"
                late = "—"
                if "timing" in v:
                    f, r = v["timing"]["fwd"]["release_late"], v["timing"]["rev"]["release_late"]
                    w = f if f["p99_us"] >= r["p99_us"] else r
                    late = f"{w['p50_us']:.0f} / {w['p99_us']:.0f} / {max(f['max_us'], r['max_us']):.0f}"
                lines.append(f"| {emu} | {cond} | {d} ms | {v['n']} | {v['median_ms']:.3f} | {v['p99_ms']:.3f} | "
                             f"{v['max_ms']:.3f} | {added} | {tcp} | {v['loadavg']:.1f} | {late} |")
    lines += ["", "## Forwarding rate (no bandwidth limit, 1 ms delay, one direction)", "",
              "| emulator | UDP offered (Mb/s) | UDP received (Mb/s) | 1500-B pkt/s | UDP loss | CPU (% of a core) | TCP (Mb/s) | CPU during TCP |",
              "|---|---|---|---|---|---|---|---|"]
    for emu, _, _ in EMULATORS:
        u, t = rows[(emu, "rate")]["udp"], rows[(emu, "rate")]["tcp"]
        lines.append(f"| {emu} | {u['offered_mbps']:.0f} | {u['received_mbps']:.0f} | {u['pps']:.0f} | {u['loss_pct']:.1f} % "
                     f"| {u['cpu_pct']:.0f} | {t['tcp_mbps']:.0f} | {t['cpu_pct']:.0f} |")
    lines += ["", "CPU counts the emulator's processes (linkem; wirefilter + both vde_switch) over the test.",
              "The UDP sender (iperf3, one core) is part of the path and may be the limit on 2 vCPUs.", ""]
    out = Path(__file__).with_name(f"RESULTS-{tag}.md")
    out.write_text("\n".join(lines))
    (Path(__file__).with_name(f"results-{tag}.json")).write_text(
        json.dumps({("|".join(map(str, k)) if isinstance(k, tuple) else k): v for k, v in rows.items()}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
