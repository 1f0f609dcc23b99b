"""Packet-level runs of Tang et al.'s Reno/FAST examples on the project simulator (``mpcc.sim``).

``run(scenario, seed, measure, sample_interval_s)`` → :class:`FastRun`: the simulator's
summary (``RunResult``) plus the Algorithm-2 log of every FAST connection (α after each update,
and the mean queueing delay q and loss/mark rate l it was computed from) and, when
``sample_interval_s`` > 0, per-flow rate samples.

Algorithm 2 (Tang et al. §VII) as the simulator implements it (``crates/mpcc-core/src/cc/fast.rs``,
``Fast::adaptation``, a periodic update of the Controller), end to end and per connection:
  q = mean over the interval of (RTT sample − baseRTT), one sample per ACK (its own RTT samples);
  l = (packets detected lost + ACKs echoing an ECN mark) / packets sent (incl. retransmissions),
      all of the connection's own packets in the interval;
  α* = q/(l·w)·α₀;  α ← min((1+δ)α, α*) if α < α*,  max((1−δ)α, α*) if α > α*;
  l = 0 with q > 0 gives α* = ∞ (α grows by δ); an interval without RTT samples leaves α.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from ..results import RunResult
from ..scenario import Scenario


@dataclass
class FastRun:
    scenario: Scenario
    seed: int
    result: RunResult
    alpha_log: dict[str, np.ndarray]  # time_s, group (index), flow, alpha, q_s, l
    rates: dict[str, np.ndarray] | None  # time_s, group, flow, rate_pps (per sample interval)
    queues: dict[str, np.ndarray] | None  # time_s, link (index), queue_pkts (instantaneous samples)
    wall_s: float


def run(scenario: Scenario, *, seed: int = 0, measure: tuple[float, float] | None = None,
        sample_interval_s: float = 0.0) -> FastRun:
    """One simulation with the FAST α log (see module doc)."""
    from .. import sim

    cr = sim.simulate(scenario, seed=seed, sample_interval_s=sample_interval_s, measure=measure)
    cols, result, wall = cr.columns, cr.result, cr.stats["wall_s"]
    sf = cols["fa_sf"].astype(np.int64)
    alpha_log = {"time_s": cols["fa_time"], "group": cols["sf_group"][sf].astype(np.int64),
                 "flow": cols["sf_flow"][sf].astype(np.int64), "alpha": cols["fa_alpha"],
                 "q_s": cols["fa_q"], "l": cols["fa_l"]}
    rates = queues = None
    if sample_interval_s > 0:
        queues = {"time_s": cols["ts_link_time"], "link": cols["ts_link_id"].astype(np.int64),
                  "queue_pkts": cols["ts_queue"].astype(float)}
        ids = cols["ts_sf_id"].astype(np.int64)
        rates = {"time_s": cols["ts_sf_time"], "group": cols["sf_group"][ids].astype(np.int64),
                 "flow": cols["sf_flow"][ids].astype(np.int64),
                 "rate_pps": cols["ts_rate"] * 1e6 / (8.0 * scenario.packet_bytes)}
    return FastRun(scenario, int(seed), result, alpha_log, rates, queues, wall)


def mean_queues(fr: FastRun, t0: float, t1: float) -> dict[str, float]:
    """Mean sampled queue (packets) of every link over [t0, t1]."""
    if fr.queues is None:
        raise ValueError("run with sample_interval_s > 0 to get queue samples")
    q = fr.queues
    sel = (q["time_s"] >= t0) & (q["time_s"] <= t1)
    return {l.name: float(np.mean(q["queue_pkts"][sel & (q["link"] == i)]))
            for i, l in enumerate(fr.scenario.links)}


def binned_queues(fr: FastRun, bin_s: float) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(bin centres, {link: mean queue in packets per bin}) — Fig. 17."""
    q = fr.queues
    edges = np.arange(0.0, fr.scenario.duration_s + bin_s / 2, bin_s)
    out = {}
    for i, l in enumerate(fr.scenario.links):
        sel = q["link"] == i
        idx = np.clip(np.digitize(q["time_s"][sel], edges) - 1, 0, len(edges) - 2)
        tot = np.bincount(idx, weights=q["queue_pkts"][sel], minlength=len(edges) - 1)
        out[l.name] = tot / np.maximum(np.bincount(idx, minlength=len(edges) - 1), 1)
    return 0.5 * (edges[:-1] + edges[1:]), out


def group_index(scenario: Scenario, name: str) -> int:
    return [g.name for g in scenario.groups].index(name)


def alpha_trajectory(fr: FastRun, group: str) -> tuple[np.ndarray, np.ndarray]:
    """(update times, mean α over the group's flows after each update) — Fig. 13/16 (a)."""
    gi = group_index(fr.scenario, group)
    sel = fr.alpha_log["group"] == gi
    t, a = fr.alpha_log["time_s"][sel], fr.alpha_log["alpha"][sel]
    if t.size == 0:
        return t, a
    # connections of a group update at nearly the same instants (start + k·interval, start
    # jitter ≤ 1 s): bin by update index
    g = fr.scenario.groups[gi]
    interval = float(g.algorithm.params.get("adapt_interval_s", 120.0))
    k = np.round((t - g.start_s) / interval).astype(np.int64)
    ks = np.unique(k)
    return np.array([t[k == i].mean() for i in ks]), np.array([a[k == i].mean() for i in ks])


def binned_rates(fr: FastRun, group: str, bin_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, mean per-flow rate of the group in packets/ms) from the rate samples."""
    if fr.rates is None:
        raise ValueError("run with sample_interval_s > 0 to get rate samples")
    gi = group_index(fr.scenario, group)
    sel = fr.rates["group"] == gi
    t, r = fr.rates["time_s"][sel], fr.rates["rate_pps"][sel]
    n_flows = fr.scenario.groups[gi].count
    edges = np.arange(0.0, fr.scenario.duration_s + bin_s / 2, bin_s)
    idx = np.clip(np.digitize(t, edges) - 1, 0, len(edges) - 2)
    tot = np.bincount(idx, weights=r, minlength=len(edges) - 1)
    cnt = np.bincount(idx, minlength=len(edges) - 1)
    samples_per_flow = np.maximum(cnt / n_flows, 1)
    # inactive flows have no samples: divide by the number of sample instants in the bin
    return 0.5 * (edges[:-1] + edges[1:]), tot / samples_per_flow / n_flows / 1e3
