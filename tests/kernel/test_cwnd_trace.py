"""The default build's single-route EWTCP(a = 1) backs off as the kernel's Reno: single-subflow
MPTCP connections over one path through linkem with every 200th data packet dropped (by packet
count), the loss events of the tcp:tcp_probe window trace (python/mpcc/lab/cwnd_trace.py: the
window before each reduction and the ssthresh set) compared event for event. Root only.

Reno itself does not repeat its later loss events in order: after the first five (slow start
and its exit) it switches between two cycles, (21, 10) and (22, 11), by ACK timing (6.1, 6.12
guests and 6.18, 2026-11-28, bench/kernel/RESULTS.md §16), and the slow-start exit window can
differ by one packet (one delayed ACK: 209 or 210, ssthresh 104 or 105). So the test asks
(same_dynamics) that every EWTCP loss event sets Reno's ssthresh (max(w/2, 2)), its first five
windows are within one packet of three reno runs', and each later window is within one packet
of one a reno run had (the two cycles are one packet apart, so which cycle a run sits in is not
judged: asking for a cycle a reno run had failed 1 of 10 guest checks on 2026-11-29, with both
reno runs in (22, 11) and EWTCP in (21, 10)). None of the 14 recorded guest checks is outside
the rule (RESULTS.md §16); the false-failure rate is not measured beyond that (< 1 in 14 per
run is all they show) — this host runs the compat build, where the test skips.

EWTCP needs the default build: on a kernel where the loader selects the compat build (one that
skips struct_ops programs, bench/kernel/KERNEL_BUG.md) it skips; the stock 6.1 and 6.12 guests
run the same comparison (`make kernels`, row trace:ewtcp)."""

from __future__ import annotations

import os

import pytest

from mpcc.kernel.bpf import environment_problem

os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
_SKIP = environment_problem()
pytestmark = [pytest.mark.kernel, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

DROP_EVERY = 200
SECS = 4.0
MIN_EVENTS = 8


def test_default_ewtcp_single_route_loss_events_equal_reno():
    from mpcc.kernel import bpf
    from mpcc.lab import cwnd_trace
    build, why = bpf.selected_build()
    if build != "default":
        pytest.skip(f"the loader selects the {build} build here ({why}); the stock guests run this (make kernels)")
    with bpf.load("ewtcp"):
        ewtcp = cwnd_trace.run_one(bpf.kernel_name("ewtcp"), "mptcp", SECS, DROP_EVERY)
        renos = [cwnd_trace.run_one("reno", "mptcp", SECS, DROP_EVERY) for _ in range(3)]
    assert cwnd_trace.same_dynamics(ewtcp, renos, min_events=MIN_EVENTS) is None, \
        (ewtcp["loss_events"][:12], [r["loss_events"][:12] for r in renos])
