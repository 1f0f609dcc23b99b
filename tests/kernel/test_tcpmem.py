"""The running kernel's tcp_sndbuf_expand per_mss (mpcc.testbed.tcpmem), which the simulator's
linux mode takes as ``[sim] sndbuf_per_mss``: measured on one loopback connection in a private
network namespace (root).

False-failure rate: 0. Nothing is timed or sampled: the buffer tcp_init_buffer_space gives a new
connection is a function of the kernel's build and the connection's MSS.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from mpcc.testbed.tcpmem import kernel_sndbuf_per_mss

pytestmark = [pytest.mark.kernel,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a private network namespace)")]


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@pytest.mark.parametrize("mss, at_least", [(1460, 2048), (536, 1024), (8960, 16384)])
def test_per_mss_is_a_power_of_two_head_plus_the_skb(mss, at_least):
    """roundup_pow_of_two(mss + MAX_TCP_HEADER + skb_shared_info) + SKB_DATA_ALIGN(sk_buff):
    a power of two that holds the MSS and skb_shared_info (320 B on 64-bit), plus the sk_buff
    (256 B on 64-bit builds of 6.x)."""
    per_mss = kernel_sndbuf_per_mss(mss)
    assert _pow2(per_mss - 256) and per_mss - 256 >= max(at_least, mss + 320), per_mss


def test_the_probe_leaves_no_namespace_and_is_cached():
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    kernel_sndbuf_per_mss.cache_clear()
    a = kernel_sndbuf_per_mss(1448)
    assert kernel_sndbuf_per_mss(1448) == a and kernel_sndbuf_per_mss.cache_info().hits >= 1
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout == before
