"""A bad snd_ssthresh our ssthresh() never returned (bench/kernel/CHURN.md §3c; root only).

Twenty plain TCP connections with mpcc balia over a veth whose 20 Mbit/s tbf (30 kB queue) drops
at the sender (tcp_enter_cwr in the transmit path), everything on CPU 0, for 15 s. On the 6.18
testbed kernel the socket is sometimes left, at a congestion-state change, with snd_ssthresh =
0x81104110 (the low half of srso_alias_return_thunk + 5, a return address left on the stack)
although our ssthresh() program did not run (its run counter in the CA area does not move): an
unwritten return value. The repair that opens our cong_control (before our PRR, so the value is
never multiplied into a window; CHURN.md §3d) must catch every such value (kind 5 of mpcc_jumps)
and leave a sane one; the kernel writing it at all is recorded as an expected failure
until the kernel is fixed (it happens with plain TCP as with MPTCP subflows)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from mpcc.kernel import bpf, records as bpf_records
from mpcc.kernel.bpf import environment_problem

os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
_SKIP = environment_problem()
pytestmark = [pytest.mark.kernel, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

NS_A, NS_B = "mpccssA", "mpccssB"
SERVER = textwrap.dedent("""
    import socket, threading
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("10.98.0.2", 5998)); ls.listen(256); print("ready", flush=True)
    def serve(c):
        b = bytearray(1 << 16)
        while c.recv_into(b): pass
    while True:
        c, _ = ls.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
""")
CLIENT = textwrap.dedent("""
    import socket, sys, threading, time
    n, t, ca = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3].encode()
    buf = b"x" * 65536
    def run():
        s = socket.socket(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ca)
        s.settimeout(t + 5)
        try:
            s.connect(("10.98.0.2", 5998)); end = time.time() + t
            while time.time() < end: s.send(buf)
        except OSError:
            pass          # a connection the tbf starves may time out: the counts are what matter
        s.close()
    th = [threading.Thread(target=run) for _ in range(n)]
    [x.start() for x in th]; [x.join() for x in th]
""")


def _sh(cmd: str) -> None:
    subprocess.run(cmd, shell=True, check=True, capture_output=True)


@pytest.fixture(scope="module")
def run():
    subprocess.run(f"ip netns del {NS_A}; ip netns del {NS_B}", shell=True, capture_output=True)
    _sh(f"ip netns add {NS_A} && ip netns add {NS_B} && "
        f"ip link add ssa0 netns {NS_A} type veth peer name ssb0 netns {NS_B} && "
        f"ip -n {NS_A} addr add 10.98.0.1/24 dev ssa0 && ip -n {NS_B} addr add 10.98.0.2/24 dev ssb0 && "
        f"ip -n {NS_A} link set ssa0 up && ip -n {NS_B} link set ssb0 up && "
        f"ip netns exec {NS_A} tc qdisc add dev ssa0 root tbf rate 20mbit burst 10kb limit 30000")
    srv = None
    try:
        with bpf.load("balia", diag=True):
            srv = subprocess.Popen(["taskset", "-c", "0", "ip", "netns", "exec", NS_B, sys.executable,
                                    "-c", SERVER], stdout=subprocess.PIPE, text=True)
            assert srv.stdout.readline().strip() == "ready"
            subprocess.run(["taskset", "-c", "0", "ip", "netns", "exec", NS_A, sys.executable, "-c", CLIENT,
                            "20", "15", bpf.kernel_name("balia")], check=True, capture_output=True, timeout=60)
            time.sleep(0.5)
            yield bpf_records.jumps_read("balia")
    finally:
        if srv:
            srv.kill()
            srv.wait()
        subprocess.run(f"ip netns del {NS_A}; ip netns del {NS_B}", shell=True, capture_output=True)


def test_every_bad_ssthresh_is_repaired_to_a_sane_value(run):
    assert run["unrepaired"] == 0, [r for r in run["last"] if r["fault"]][:3]
    for r in run["last"]:
        # after the repair: the rule's ssthresh of the window the loss reduced (≤ prior_cwnd, ≥ 1)
        assert 1 <= r["acked"] <= max(r["prior_cwnd"], 2), r


@pytest.mark.xfail(reason="the 6.18 testbed kernel writes an unwritten struct_ops return value "
                          "(0x81104110) into snd_ssthresh at some congestion-state changes although our "
                          "ssthresh() did not run (bench/kernel/CHURN.md §3c); kernel-side, not fixed here",
                   strict=False)
def test_the_kernel_never_leaves_an_ssthresh_our_program_did_not_return(run):
    assert run["repaired"] == 0, run["last"][:2]
