"""The running kernel's socket-memory constants that the simulator's linux connection level
needs (``[sim] sndbuf_per_mss``), measured rather than assumed: they depend on the kernel's
build configuration, not only on its version (bench/kernel/RESULTS.md §26)."""

from __future__ import annotations

import functools
import subprocess
import sys

from ..errors import EnvironmentProblem

#: A child process of its own (single-threaded: no fork-time locks) moves itself into a private
#: network namespace (unshare(CLONE_NEWNET); gone when it exits), brings loopback up, sets
#: tcp_wmem[1] below 20 segments and opens one TCP connection whose both ends clamp the MSS
#: (TCP_MAXSEG before listen/connect, as a veth of MTU mss + 40 would), its sender on Reno (no
#: sndbuf_expand callback: the kernel's factor 2; the host's default may be BBR's 3). At
#: establishment tcp_init_buffer_space → tcp_sndbuf_expand sets sk_sndbuf = 2 · max(TCP_INIT_CWND,
#: cwnd, reordering + 1) · per_mss = 20 · per_mss, which SO_SNDBUF reads back.
_PROBE = r"""
import ctypes, os, socket, subprocess, sys
if ctypes.CDLL(None, use_errno=True).unshare(0x40000000) != 0:
    sys.exit("unshare(CLONE_NEWNET): " + os.strerror(ctypes.get_errno()))
mss = int(sys.argv[1])
subprocess.run(["ip", "link", "set", "lo", "up"], check=True, capture_output=True)
with open("/proc/sys/net/ipv4/tcp_wmem", "w") as f:
    f.write("4096 4096 4194304")
ls = socket.socket()
ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
ls.bind(("127.0.0.1", 0))
ls.listen(1)
c = socket.socket()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
c.connect(ls.getsockname())
print(c.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF))
"""


@functools.lru_cache(maxsize=8)
def kernel_sndbuf_per_mss(mss: int = 1460) -> int:
    """``per_mss`` of the running kernel's ``tcp_sndbuf_expand`` for a connection of MSS ``mss``:
    roundup_pow_of_two(mss + MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(skb_shared_info))) +
    SKB_DATA_ALIGN(sizeof(struct sk_buff)) (net/ipv4/tcp_input.c), measured on one loopback
    connection in a private network namespace (root). For a 1460-byte MSS: 4352 on Debian's generic
    and rt 6.1 and 6.12, 2304 on Debian's cloud kernels and the testbed's 6.18 (`make kernels`
    records each kernel's). Cached per process."""
    try:
        p = subprocess.run([sys.executable, "-c", _PROBE, str(int(mss))], capture_output=True, text=True,
                           timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        raise EnvironmentProblem(f"cannot measure the kernel's tcp_sndbuf_expand per_mss: {e} "
                                 f"(fix: run as root, or set [sim] sndbuf_per_mss)") from None
    out = p.stdout.strip()
    if p.returncode != 0 or not out.isdigit() or int(out) % 20:
        why = (p.stderr.strip().splitlines() or [out or f"exit {p.returncode}"])[-1]
        raise EnvironmentProblem(f"cannot measure the kernel's tcp_sndbuf_expand per_mss: {why} "
                                 f"(fix: run as root, or set [sim] sndbuf_per_mss)")
    return int(out) // 20


def sim_per_mss_or_none(packet_bytes: int) -> int | None:
    """The running kernel's per_mss for the testbed's MSS (its veths have MTU ``packet_bytes``),
    or None where it cannot be measured (not root, no namespaces)."""
    try:
        return kernel_sndbuf_per_mss(max(int(packet_bytes) - 40, 88))
    except EnvironmentProblem:
        return None
