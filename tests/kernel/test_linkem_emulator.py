"""linkem on the real kernel: delay accuracy, rate, drop-tail bound, RED drops and ECN marks.

Each test builds the testbed topology of a one-link scenario (client ns — linkem relay ns —
server ns) and measures through it with independent tools (ping, a UDP burst, TCP flows).
Needs root, MPTCP and a built linkem; skips otherwise. ~40 s in total.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from mpcc import scenario

pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(os.geteuid() != 0, reason="kernel testbed tests need root")]


def _ready():
    from mpcc.testbed import topology
    if problem := topology.environment_problem():
        pytest.skip(problem)
    if subprocess.run(["which", "ping"], capture_output=True).returncode != 0:
        pytest.skip("ping (iputils-ping) not installed")


def one_link(rate=100.0, delay=10.0, buffer=100, extra="", duration=10.0, count=1, algorithm="reno"):
    return scenario.loads(f"""
name = "linkem-test"
duration_s = {duration}
[[links]]
name = "l"
capacity_mbps = {rate}
delay_ms = {delay}
buffer_pkts = {buffer}
{extra}
[[groups]]
name = "sp"
count = {count}
algorithm = "{algorithm}"
paths = [["l"]]
""")


@pytest.fixture
def topo(tmp_path):
    """Build a topology for a scenario; torn down afterwards."""
    _ready()
    from mpcc.testbed import netns, topology
    runs = []

    def make(s):
        r = netns.Run().open()
        runs.append(r)
        t = topology.build(s, r, tmp_path / f"t{len(runs)}")
        time.sleep(0.3)  # linkem opening its sockets
        return r, t

    yield make
    for r in runs:
        r.close()


def ping_rtts_ms(ns: str, addr: str, n: int, interval: float = 0.02, size: int = 56) -> list[float]:
    out = subprocess.run(["ip", "netns", "exec", ns, "ping", "-n", "-c", str(n), "-i", str(interval), "-s", str(size), addr],
                         capture_output=True, text=True, timeout=60).stdout
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]


@pytest.mark.parametrize("delay_ms", [10.0, 40.0])  # ping prints 0.1 ms below 100 ms
def test_ping_rtt_is_twice_the_one_way_delay(topo, delay_ms):
    """False-failure rate: the minimum RTT ≥ 2 × delay is deterministic (linkem never forwards early);
    the median of 60 pings within 1 ms fails only if more than 30 of 60 pings are delayed ≥ 1 ms
    by scheduling (bench/linkem: median ≤ 0.12 ms). Estimated ≈ 0; ping loss on an idle link
    fails it too (not seen)."""
    r, t = topo(one_link(rate=100.0, delay=delay_ms))
    server = t.links["l"].server_addr
    ping_rtts_ms(t.client_ns, server, 2)  # warm-up
    rtts = sorted(ping_rtts_ms(t.client_ns, server, 60))
    assert len(rtts) == 60, "ping lost packets on an idle link"
    expect = 2 * delay_ms  # plus 2 × (84 B at 100 Mb/s = 6.7 µs) serialisation
    med = rtts[len(rtts) // 2]
    # Correctness: a packet never arrives before its propagation delay, and the delay is applied
    # once per direction (a missing or doubled delay is off by ≥ 10 ms). Sub-millisecond
    # precision is a timing target on a shared 2-core machine: it is measured, side by side with
    # vde-wirefilter, in bench/linkem (RESULTS.md: median ≤ 0.12 ms, p99 0.09–0.23 ms).
    assert rtts[0] >= expect
    assert med - expect < 1.0, f"median RTT {med} ms vs {expect} ms"


def test_udp_burst_is_cut_at_the_buffer(topo):
    """Drop-tail: a back-to-back burst of 300 packets into a 10 Mb/s link with a 20-packet
    buffer delivers 20 + (what the link sent during the burst) + 1 in service.

    False-failure rate: deterministic bounds (buffer + what the link sent during the measured burst
    time + 2 in service); 0 but for the sink's 1.5 s idle timeout, which a > 1.5 s stall of the
    sender would cut short."""
    r, t = topo(one_link(rate=10.0, delay=1.0, buffer=20))
    lp = t.links["l"]
    code = f"""
import socket, time
rx = None
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{lp.client_addr(0)}", 0))
buf = bytes(1472)
t0 = time.monotonic()
for _ in range(300):
    s.sendto(buf, ("{lp.server_addr}", 9999))
print(time.monotonic() - t0)
"""
    sink = subprocess.Popen(["ip", "netns", "exec", t.server_ns, sys.executable, "-c",
                             "import socket,sys\nu=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\nu.bind(('0.0.0.0',9999))\n"
                             "u.settimeout(1.5)\nn=0\nprint('ready',flush=True)\n"
                             "while True:\n try: u.recv(4096); n+=1\n except socket.timeout: break\nprint(n)"],
                            stdout=subprocess.PIPE, text=True)
    assert sink.stdout.readline().strip() == "ready"
    burst = subprocess.run(["ip", "netns", "exec", t.client_ns, sys.executable, "-c", code],
                           capture_output=True, text=True, timeout=30)
    burst_s = float(burst.stdout.strip())
    received = int(sink.communicate(timeout=30)[0].strip())
    tx_s = 1500 * 8 / 10e6  # one packet's transmission time
    upper = 20 + burst_s / tx_s + 2
    assert 20 <= received <= upper, f"received {received}, burst took {burst_s * 1e3:.2f} ms"


def _run(s, **kw):
    """One testbed run of kernel Reno (no BPF program): the tests that call it use one attempt
    (one_attempt_per_run), since what they judge are the emulator's own facts (its rate cap,
    queue, drops and marks), which releases ≥ 1 ms late on a busy host do not move."""
    from mpcc.testbed import engine
    _ready()
    st = engine.settings_from(s, **kw)
    return engine.run_scenario(s, st, None, progress=False)


def test_tcp_throughput_matches_the_configured_rate(one_attempt_per_run):
    """False-failure rate: one Reno flow with a buffer ~3× its BDP keeps the link ≥ 90 % busy over 6 s
    (it halves to ≥ 1.5 BDP); the cap is linkem's (1 %). Estimated ≈ 0 on a stock kernel."""
    # 20 Mb/s, 5 ms, buffer 50 ≥ BDP (17 packets): one Reno flow keeps the link busy
    res = _run(one_link(rate=20.0, delay=5.0, buffer=50, duration=8.0), warmup_s=2.0)
    link = res.links["l"]
    assert 0.9 * 20.0 <= link.load_mbps <= 1.01 * 20.0, link
    # payload rate: 1448 of every 1500 bytes
    assert res.groups["sp"].rate_mbps == pytest.approx(20.0 * 1448 / 1500, rel=0.1)
    assert link.extra["queue_max_pkts"] <= 50
    assert link.extra["drops_tail"] > 0  # Reno fills the buffer and loses packets


def test_red_keeps_the_average_queue_low_and_drops_early(one_attempt_per_run):
    """False-failure rate: RED's average queue stays near its thresholds (5–15) while the bound is 30,
    with drops_red > 0 and ≥ 80 % load for four backlogged flows over 6 s: estimated ≈ 0 on a
    stock kernel."""
    red = "aqm = \"red\"\nred = { min_th = 5, max_th = 15, max_p = 0.1 }"
    res = _run(one_link(rate=20.0, delay=5.0, buffer=100, extra=red, duration=8.0, count=4), warmup_s=2.0)
    link = res.links["l"]
    assert link.extra["drops_red"] > 0
    assert link.extra["queue_mean_pkts"] < 30, link  # drop-tail would sit near the 100-packet buffer
    assert link.load_mbps >= 0.8 * 20.0


def test_red_with_ecn_marks_instead_of_dropping(one_attempt_per_run):
    """False-failure rate: with ECN on, RED marks and drops only on buffer overflow (100 packets, the
    average queue near 5–15): marks > 5 × drops fails only on a sustained overflow. Estimated ≈
    0 on a stock kernel."""
    red = "aqm = \"red\"\nred = { min_th = 5, max_th = 15, max_p = 0.1, ecn = true }"
    res = _run(one_link(rate=20.0, delay=5.0, buffer=100, extra=red, duration=8.0, count=4), warmup_s=2.0)
    link = res.links["l"]
    assert link.extra["marks"] > 0
    assert link.extra["marks"] > 5 * link.extra["drops"], link
