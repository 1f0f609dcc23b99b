"""Linux-version details of window growth (``[sim] per_ack_increase``, ``slow_start_at_ssthresh``)
and OLIA's window update: per acknowledged packet by default (as the BPF program's), as in the
out-of-tree mptcp_olia.c (per ACK, whole packets) with ``per_ack = 1``."""

import numpy as np
import pytest

from mpcc import sim

from sim_helpers import group, single_link


def _loss_events(algo, sim_table, duration=120.0):
    s = single_link(groups=group("a", algo), duration=duration, sim="[sim]\n" + sim_table)
    g = sim.run(s, seed=1, sample_interval_s=0).result.groups["a"]
    return g.extra["loss_events"]


def test_per_ack_increase_halves_reno_growth_with_delayed_acks():
    # Congestion avoidance adds 1/w per ACK. With one ACK per two packets, counting ACKs
    # (Linux 3.x) grows the window by 1/2 packet per RTT instead of 1, so each sawtooth
    # (W/2 → W) lasts twice as many RTTs: half as many loss events in the same time.
    per_packet = _loss_events("reno", "delayed_ack = true")
    per_ack = _loss_events("reno", "delayed_ack = true\nper_ack_increase = true")
    assert per_ack / per_packet == pytest.approx(0.5, rel=0.2), (per_ack, per_packet)


OLIA_PER_ACK = '{name = "olia", per_ack = 1}'


def test_olia_per_ack_counts_acks_not_packets_and_the_default_counts_packets():
    # mptcp_olia.c (per_ack = 1) adds I_r once per ACK whatever it acknowledges; with one route
    # I_r = (w/τ²)/(w/τ)² = 1/w (Reno's), so delayed ACKs halve its growth, while Reno's and the
    # default OLIA's (per acknowledged packet, as the BPF program's default) are unchanged.
    olia1 = _loss_events(OLIA_PER_ACK, "delayed_ack = true") / _loss_events(OLIA_PER_ACK, "delayed_ack = false")
    olia0 = _loss_events("olia", "delayed_ack = true") / _loss_events("olia", "delayed_ack = false")
    reno = _loss_events("reno", "delayed_ack = true") / _loss_events("reno", "delayed_ack = false")
    assert olia1 == pytest.approx(0.5, rel=0.2), olia1
    assert olia0 == pytest.approx(1.0, rel=0.2), olia0
    assert reno == pytest.approx(1.0, rel=0.2), reno


def test_olia_per_ack_windows_are_whole_packets():
    # mptcp_olia.c's snd_cwnd is an integer moved by ±1 through a 2^-10 fixed-point counter, and
    # ssthresh = max(w >> 1, 2)
    s = single_link(groups=group("mp", OLIA_PER_ACK, paths='[["l"], ["l"]]') + group("sp"), duration=30.0)
    t = sim.run(s, seed=1, sample_interval_s=0.01).timeseries["subflows"]
    g = np.asarray(t["group"])
    w = t["cwnd_pkts"][g == "mp"]
    assert len(w) > 1000 and np.all(w == np.round(w)) and w.min() >= 1
    # Reno's window is fractional (per-ACK increase 1/w)
    assert np.any(t["cwnd_pkts"][g == "sp"] % 1 != 0)


def test_slow_start_at_ssthresh_gives_a_packet_back_after_each_loss():
    # With cwnd ≤ ssthresh the first ACK after a halving is a slow-start ACK (+1 packet) before
    # congestion avoidance resumes: the sawtooth runs from W/2 + 1 (not W/2) up to the same W
    # (buffer + BDP), so its mean rises by half a packet.
    def mean_cwnd(sim_table):
        s = single_link(groups=group("a"), duration=60.0, sim="[sim]\n" + sim_table)
        t = sim.run(s, seed=1, sample_interval_s=0.01).timeseries["subflows"]
        time_s, w = t["time_s"], t["cwnd_pkts"]
        return w[time_s > 10].mean()
    assert mean_cwnd("slow_start_at_ssthresh = true") - mean_cwnd("slow_start_at_ssthresh = false") \
        == pytest.approx(0.5, abs=0.2)
