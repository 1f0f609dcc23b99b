"""Per-route quantities every engine reports, and the fluid model's window at the measured
price and RTT (eq. (7) of Peng et al.).

For each engine, group and route r (per flow, mean over the group's flows):

* ``rate_mbps`` — the route's rate;
* ``loss_rate`` — packets of the route lost or marked / packets sent (sim: drops + ECN marks;
  testbed: retransmitted segments / segments delivered + retransmitted; fluid: the route price q_r,
  which the model treats as a loss probability);
* ``loss_event_rate`` — window reductions / packets sent (sim; testbed: = loss_rate, tcp_info has
  no loss-event count; fluid: q_r). This is the price the window answers to;
* ``price`` — Σ of the link prices p_l along the route as the engine measures them at the links;
* ``mean_cwnd_pkts``, ``mean_rtt_ms`` — time means in the measurement window;
* ``base_rtt_ms`` = 2 Σ delay_l, ``queue_ms`` = Σ mean queue_l / c_l along the route,
  ``transmission_ms`` = Σ packet_bits / c_l (each packet's own serialisation at every link, which
  the mean queue leaves out where the links are slow; the fluid model has none);
* ``model_cwnd_pkts`` — the window w_r = x_r τ_r that solves φ_r(x_s) = q_r (eq. 7 at
  equilibrium) for all routes of the flow at once, with τ_r the measured mean RTT and q_r the
  measured loss-event rate; ``model_rate_mbps`` = w_r/τ_r;
* ``retransmits``, ``timeouts`` — per flow in the window (testbed: no timeout count).

A window close to the model's means the algorithm does what eq. (7) says at the price it sees:
a rate difference then comes from the price or the RTT (the link, not the algorithm). A window
far from the model's means packet-level dynamics the fluid model leaves out (timeouts, windows
of a few packets, bursts of losses in one window).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from ..scenario import Group, Scenario


def model_window(algorithm, tau_s: list[float], q: list[float]) -> tuple[list[float], float]:
    """Windows (packets) solving φ_r(x) = q_r over the routes of one flow (eq. 7), with
    τ in seconds; routes with q_r ≤ 0 or no RTT are left out (NaN). Returns (w, residual):
    the residual is max_r |log φ_r − log q_r| at the solution (≈ 0 when an interior
    equilibrium exists, large when e.g. Coupled puts all its rate on the cheapest route)."""
    tau = np.asarray(tau_s, dtype=float)
    q = np.asarray(q, dtype=float)
    ok = np.isfinite(tau) & (tau > 0) & np.isfinite(q) & (q > 0)
    if not ok.any():
        return [math.nan] * len(tau), math.nan
    tau_f = np.where(ok, tau, np.nanmax(np.where(ok, tau, np.nan)))
    x0 = np.where(ok, np.sqrt(2.0 / np.where(ok, q, 1.0)) / tau_f, 1.0 / tau_f)  # Reno

    def resid(z):
        with np.errstate(all="ignore"):   # the solver's trial steps can overflow exp (inf: handled below)
            x = np.exp(z)
            phi = np.asarray(algorithm.fluid_phi(x, tau_f), dtype=float)
        r = np.log(np.maximum(phi, 1e-300)) - np.log(np.where(ok, q, 1.0))
        return np.where(ok, np.nan_to_num(r, nan=50.0, posinf=50.0, neginf=-50.0), 0.0)

    sol = least_squares(resid, np.log(x0), method="lm" if ok.sum() <= len(tau) else "trf", max_nfev=400)
    x = np.exp(sol.x)
    w = np.where(ok, x * tau_f, np.nan)
    return [float(v) for v in w], float(np.max(np.abs(resid(sol.x))))


def _route_links(s: Scenario, g: Group, r: int):
    return [s.link(n) for n in g.paths[r]]


def _utilisation(s: Scenario, g: Group, r: int, links) -> dict[str, Any]:
    """The least-utilised link of route r: the fluid model prices only full links (y_l = c_l)."""
    best = (math.inf, "")
    for l in _route_links(s, g, r):
        e = links.get(l.name)
        if e is None:
            continue
        u = e.extra.get("utilization", e.extra.get("utilisation", math.nan))
        if math.isfinite(u) and u < best[0]:
            best = (u, l.name)
    return {"min_utilisation": best[0] if best[1] else math.nan, "min_utilisation_link": best[1]}


def _fill_model(s: Scenario, g: Group, rows: list[dict[str, Any]]) -> None:
    tau = [row["mean_rtt_ms"] / 1e3 if row.get("mean_rtt_ms") else math.nan for row in rows]
    q = [row.get("loss_event_rate", math.nan) for row in rows]
    w, res = model_window(g.algorithm, tau, q)
    bits = s.packet_bytes * 8.0
    for row, wr, t in zip(rows, w, tau):
        row["model_cwnd_pkts"] = wr
        row["model_rate_mbps"] = wr / t * bits / 1e6 if (math.isfinite(wr) and t > 0) else math.nan
        row["model_residual"] = res


# --- per engine --------------------------------------------------------------------------------
def fluid_routes(s: Scenario, run) -> dict[str, list[dict[str, Any]]]:
    eq = run.detail
    net = eq.network
    out = {}
    for si, g in enumerate(eq.groups or []):
        rows = []
        for k, r in enumerate(np.flatnonzero(net.source_of_route == si)):
            tau = float(net.tau[r])
            q = float(eq.q[r])
            base = s.path_delay_s(g.paths[k])
            rows.append({"rate_mbps": s.pps_to_mbps(float(eq.x[r])), "loss_rate": q, "loss_event_rate": q,
                         "price": q, "mean_cwnd_pkts": float(eq.x[r] * tau), "mean_rtt_ms": 1e3 * tau,
                         "base_rtt_ms": 1e3 * base, "queue_ms": 1e3 * (tau - base),
                         "model_cwnd_pkts": float(eq.x[r] * tau), "model_rate_mbps": s.pps_to_mbps(float(eq.x[r])),
                         "model_residual": 0.0, "retransmits": math.nan, "timeouts": math.nan,
                         **_utilisation(s, g, k, run.result.links)})
        out[g.name] = rows
    return out


def _transmission_ms(s: Scenario, g: Group, r: int) -> float:
    """Σ over the route's links of one packet's transmission time (ms)."""
    return 1e3 * sum(1.0 / s.capacity_pps(l) for l in _route_links(s, g, r))


def _window_mean(t: np.ndarray, v: np.ndarray, a: float, b: float) -> float:
    m = (t >= a) & (t <= b) & np.isfinite(v)
    return float(np.mean(v[m])) if m.any() else math.nan


def _merge_runs(s: Scenario, run, per_run: list[dict]) -> dict[str, list[dict[str, Any]]]:
    """Per group and route, the mean over runs of every quantity (NaN where no run has a finite
    value), the least-used link of the route and the fluid model's window (``_fill_model``)."""
    merged = {}
    for g in s.groups:
        rows = []
        for r in range(len(g.paths)):
            vals = {k: [pr[g.name][r][k] for pr in per_run] for k in per_run[0][g.name][r]}
            rows.append({k: float(np.nanmean(v)) if any(math.isfinite(x) for x in v) else math.nan
                         for k, v in vals.items()})
            rows[-1]["min_utilisation_link"] = _utilisation(s, g, r, run.result.links)["min_utilisation_link"]
        _fill_model(s, g, rows)
        merged[g.name] = rows
    return merged


def sim_routes(s: Scenario, run) -> dict[str, list[dict[str, Any]]]:
    """Means over the runs (seeds) of the per-route quantities."""
    per_run = []
    for sr in run.detail:
        res = sr.result
        t0, t1 = res.extra["measure_s"]
        sub = sr.timeseries["subflows"]
        lk = sr.timeseries["links"]
        ts, grp = sub["time_s"], sub["group"]
        route, cwnd, srtt = sub["route"], sub["cwnd_pkts"], sub["srtt_s"]
        lt, lname, lq = lk["time_s"], lk["link"], lk["queue_pkts"]
        queue_s = {}
        for l in s.links:
            m = lname == l.name
            queue_s[l.name] = _window_mean(lt[m], lq[m].astype(float), t0, t1) / s.capacity_pps(l)
        out = {}
        for g in s.groups:
            ge = res.groups[g.name].extra
            rows = []
            for r in range(len(g.paths)):
                m = (grp == g.name) & (route == r)
                sent = ge["path_sent"][r]
                lost = ge["path_drops"][r] + ge["path_marks"][r]
                rows.append({
                    "rate_mbps": res.groups[g.name].path_rate_mbps[r],
                    "loss_rate": lost / sent if sent else math.nan,
                    "loss_event_rate": ge["path_loss_events"][r] / sent if sent else math.nan,
                    "price": sum(res.links[l.name].price for l in _route_links(s, g, r)),
                    "mean_cwnd_pkts": _window_mean(ts[m], cwnd[m], t0, t1),
                    "mean_rtt_ms": 1e3 * _window_mean(ts[m], srtt[m], t0, t1),
                    "base_rtt_ms": 1e3 * s.path_delay_s(g.paths[r]),
                    "queue_ms": 1e3 * sum(queue_s[n] for n in g.paths[r]),
                    "transmission_ms": _transmission_ms(s, g, r),
                    "retransmits": ge["path_retransmits"][r] / g.count,
                    "timeouts": ge["path_timeouts"][r] / g.count,
                    "min_utilisation": _utilisation(s, g, r, res.links)["min_utilisation"]})
            cl = ge.get("connection_limits")
            if cl:   # sim-linux: the connection level's samples (per group, as the testbed's)
                for r, row in enumerate(rows):
                    idle = cl["path_idle"][r] if "path_idle" in cl else cl["idle"]
                    row.update(window_full=1.0 - idle, idle_no_data=cl["idle_no_data"],
                               idle_rwnd_full=cl["idle_rwnd_full"])
            out[g.name] = rows
        per_run.append(out)
    return _merge_runs(s, run, per_run)


#: tcp_info windows above this (packets) are not windows (seen with BPF congestion controls:
#: values of 10^6–10^9); they are counted in ``implausible_cwnd_samples`` and left out of the mean.
MAX_PLAUSIBLE_CWND = 1e6


def _plausible_mean(v: np.ndarray) -> float:
    v = np.asarray(v, dtype=float)
    v = v[v <= MAX_PLAUSIBLE_CWND]
    return float(np.mean(v)) if v.size else math.nan


def _chrono(sm, gi: int, r: int) -> dict[str, float]:
    """tcp_info chrono stats of the route's sockets near the end of the run (testbed.diag):
    fractions of busy time limited by the receive window and by the send buffer."""
    c = (getattr(sm, "diag", None) or {}).get("chrono", {}).get(f"{gi}/{r}")
    if not c or not c.get("busy_ms"):
        return {"rwnd_limited": math.nan, "sndbuf_limited": math.nan}
    return {"rwnd_limited": c["rwnd_limited_ms"] / c["busy_ms"], "sndbuf_limited": c["sndbuf_limited_ms"] / c["busy_ms"]}


def mib_summary(run) -> str | None:
    """One line of the MPTCP/TCP MIB counters that changed on the testbed's sending side
    (summed over runs), or None."""
    total: dict[str, int] = {}
    for sm in run.detail["summaries"]:
        for k, v in (getattr(sm, "diag", None) or {}).get("mib_client", {}).items():
            total[k] = total.get(k, 0) + v
    if not total:
        return None
    keys = sorted(total, key=lambda k: (not k.startswith("MPTcp"), k))
    return "testbed sender MIB over the run(s): " + ", ".join(f"{k.replace('MPTcpExt', 'MPTcp:').replace('TcpExt', '')} {total[k]}" for k in keys)


def testbed_routes(s: Scenario, run) -> dict[str, list[dict[str, Any]]]:
    from ..testbed.engine import scaled
    d = run.detail
    st = scaled(s, d["duration_s"])
    mss = s.packet_bytes - 52  # IP + TCP headers with timestamps; MPTCP options make it a bit less
    per_run = []
    for sm in d["summaries"]:
        sub = {k: np.asarray(v) for k, v in sm.subflows.items()}
        out = {}
        for gi, g in enumerate(st.groups):
            a, b = g.start_s + d["warmup_s"], g.stop_s
            rows = []
            for r in range(len(g.paths)):
                m = (sub.get("group", np.zeros(0)) == g.name) & (sub.get("route", np.zeros(0)) == r) if len(sub.get("group", [])) else np.zeros(0, bool)
                tt = sub["time_s"][m] if m.any() else np.zeros(0)
                w = (tt >= a) & (tt <= b)
                rate = sm.path_rate[gi]
                rate_r = float(np.mean([f[r] for f in rate])) if rate else math.nan
                delivered = rate_r * 1e6 * (b - a) / (8.0 * mss)  # per flow
                retr = math.nan
                if m.any():
                    flows = sub["flow"][m]
                    rt = sub["retrans"][m].astype(float)
                    per_flow = []
                    for f in np.unique(flows):
                        fm = flows == f
                        tf, rf = tt[fm], rt[fm]
                        per_flow.append(float(np.interp(b, tf, rf) - np.interp(a, tf, rf)))
                    retr = float(np.sum(per_flow) / g.count)
                loss = retr / (delivered + retr) if (delivered + (retr if math.isfinite(retr) else 0)) > 0 else math.nan
                lks = _route_links(s, g, r)
                rows.append({
                    "rate_mbps": rate_r, "loss_rate": loss, "loss_event_rate": loss,
                    "price": sum(sm.link.get(l.name, {}).get("price", math.nan) for l in lks),
                    "mean_cwnd_pkts": _plausible_mean(sub["cwnd_pkts"][m][w]) if m.any() and w.any() else math.nan,
                    "implausible_cwnd_samples": int(np.sum(sub["cwnd_pkts"][m][w] > MAX_PLAUSIBLE_CWND)) if m.any() else 0,
                    "mean_rtt_ms": 1e3 * float(np.mean(sub["srtt_s"][m][w])) if m.any() and w.any() else math.nan,
                    "base_rtt_ms": 1e3 * s.path_delay_s(g.paths[r]),
                    "queue_ms": 1e3 * sum(sm.link.get(l.name, {}).get("queue_mean_pkts", math.nan) / s.capacity_pps(l) for l in lks),
                    "transmission_ms": _transmission_ms(s, g, r),
                    "retransmits": retr, "timeouts": math.nan,
                    "min_utilisation": _utilisation(s, g, r, run.result.links)["min_utilisation"],
                    **_chrono(sm, gi, r)})
            out[g.name] = rows
        per_run.append(out)
    merged = _merge_runs(s, run, per_run)
    for g in s.groups:
        limits = run.result.groups[g.name].extra.get("route_limits") or []
        conn = run.result.groups[g.name].extra.get("connection_limits") or {}
        for r, row in enumerate(merged[g.name]):
            row["window_full"] = float(limits[r].get("cwnd_limited", math.nan)) if r < len(limits) else math.nan
            row["idle_no_data"] = float(conn.get("idle_no_data", math.nan))
            row["idle_rwnd_full"] = float(conn.get("idle_rwnd_full", math.nan))
    return merged


def routes(s: Scenario, run) -> dict[str, list[dict[str, Any]]] | None:
    """Per-group, per-route quantities of an engine run (None if the engine did not run)."""
    if not run.ok:
        return None
    return {"fluid": fluid_routes, "sim": sim_routes, "sim-linux": sim_routes,
            "testbed": testbed_routes}[run.engine](s, run)


# --- causes ---------------------------------------------------------------------------------------
#: cause tag → what it means (docs/compare.md has the measurements behind each)
CAUSES = {
    "underused-link": "a link of the route carries < 95% of its capacity; the fluid model fills every priced link",
    "small-window": "mean window < 4 packets or ≥ 1 timeout per flow: losses recovered by timeout, outside eq. (7)",
    "boundary": "the fluid rate of the route is 0 (boundary equilibrium, e.g. Coupled); a packet flow keeps ≥ 1 packet",
    "window-vs-eq7": "the mean window is off eq. (7) at the measured price and RTT (sawtooth averaging, MIMD, bursts)",
    "price": "the prices the flow measures put eq. (7)'s window off the fluid window (other flows on its links differ)",
    "rtt": "the mean RTT differs from the fluid model's RTT (its queueing-delay model)",
    "delivery": "the route delivers less (or more) than its mean window per mean RTT (loss recovery, timeouts)",
}

#: The rate ratio sim/fluid of a route is the exact product of four factors (``factors``); a
#: factor is named as a cause when it points the way of the difference and carries at least this
#: share of |log(ratio)| (so a difference always has one: the four logs sum to the total).
SHARE = 0.25


def factors(row: dict[str, Any], fluid_row: dict[str, Any]) -> dict[str, float]:
    """rate/rate_fluid = (w/w_eq7) · (w_eq7/w_fluid) · (τ_fluid/τ) · (rate·τ/w), with w the mean
    window, w_eq7 eq. (7)'s window at the measured prices and RTTs, τ the mean RTT: the
    algorithm's packet dynamics ("window-vs-eq7"), the prices ("price"), the RTT ("rtt") and
    what the window delivers ("delivery"). Empty when a quantity is missing."""
    w, wm, wf = row.get("mean_cwnd_pkts", math.nan), row.get("model_cwnd_pkts", math.nan), fluid_row.get("mean_cwnd_pkts", math.nan)
    t, tf = row.get("mean_rtt_ms", math.nan), fluid_row.get("mean_rtt_ms", math.nan)
    r, rf = row.get("rate_mbps", math.nan), fluid_row.get("rate_mbps", math.nan)
    vals = (w, wm, wf, t, tf, r, rf)
    if not all(math.isfinite(v) and v > 0 for v in vals):
        return {}
    out = {"window-vs-eq7": w / wm, "price": wm / wf, "rtt": tf / t}
    out["delivery"] = (r / rf) / (out["window-vs-eq7"] * out["price"] * out["rtt"])
    return out


def causes(row: dict[str, Any], fluid_row: dict[str, Any] | None) -> list[str]:
    """The cause tags (:data:`CAUSES`) that a route's quantities show against the fluid model:
    the conditions outside the model's assumptions, then the factors of :func:`factors` that carry
    at least :data:`SHARE` of the difference in its direction."""
    out = []
    u = row.get("min_utilisation", math.nan)
    uf = fluid_row.get("min_utilisation", math.nan) if fluid_row is not None else math.nan
    if math.isfinite(u) and u < 0.95 and not (math.isfinite(uf) and u >= 0.95 * uf):
        out.append("underused-link")   # (not when the fluid model leaves the link as empty)
    if fluid_row is not None and fluid_row.get("rate_mbps", 1.0) <= 1e-9:
        out.append("boundary")
    w = row.get("mean_cwnd_pkts", math.nan)
    if (math.isfinite(w) and w < 4) or row.get("timeouts", 0) >= 1:
        out.append("small-window")
    f = factors(row, fluid_row) if fluid_row is not None else {}
    if f:
        total = math.log(row["rate_mbps"] / fluid_row["rate_mbps"])
        for tag, v in f.items():
            lv = math.log(v)
            if total != 0 and lv * total > 0 and abs(lv) >= SHARE * abs(total) and abs(v - 1) >= 0.01:
                out.append(tag)
    return out


# --- explanations ---------------------------------------------------------------------------------
def _pct(v: float) -> str:
    return "n/a" if not math.isfinite(v) else (f"{100 * v:.2f}%" if v < 0.1 else f"{100 * v:.1f}%")


def _num(v: float, fmt: str = ".1f") -> str:
    return "n/a" if not math.isfinite(v) else format(v, fmt)


def explain(engine: str, ref: str, group: str, r: int, path: tuple[str, ...], row: dict[str, Any],
            ref_row: dict[str, Any] | None) -> list[str]:
    """Lines saying why ``engine``'s route differs from ``ref``'s: price, window vs eq. (7),
    RTT, retransmissions and timeouts."""
    name = f"{engine} {group}/{r + 1} ({'→'.join(path)})"
    lines = []
    refq = ref_row["loss_event_rate"] if ref_row else math.nan
    lines.append(f"{name}: loss events {_pct(row['loss_event_rate'])} of packets (lost/marked {_pct(row['loss_rate'])}, "
                 f"links' price {_pct(row['price'])}) vs {ref} {_pct(refq)}")
    wm, w = row["model_cwnd_pkts"], row["mean_cwnd_pkts"]
    ratio = w / wm if (math.isfinite(w) and math.isfinite(wm) and wm > 0) else math.nan
    verdict = ""
    if math.isfinite(ratio):
        if abs(ratio - 1) <= 0.15:
            verdict = " → the window follows eq. (7) at the price it sees: the difference comes from the price/RTT"
        else:
            verdict = f" → the window is {100 * (ratio - 1):+.0f}% off eq. (7): packet-level dynamics the model leaves out"
        if row.get("model_residual", 0) > 0.5:
            verdict += " (no interior solution of φ = q for this flow: the model puts the rate on other routes)"
    lines.append(f"{name}: mean cwnd {_num(w)} pkts vs model {_num(wm)} at the measured price/RTT{verdict}")
    f = factors(row, ref_row) if (ref == "fluid" and ref_row) else {}
    if f:
        lines.append(f"{name}: rate / fluid rate = " + " · ".join(f"{k} {v:.2f}" for k, v in f.items())
                     + " (window vs eq. (7) at the measured price · eq. (7) vs fluid window · fluid/measured RTT · "
                       "rate per window/RTT)")
    u = row.get("min_utilisation", math.nan)
    if math.isfinite(u) and u < 0.95:
        uref = ref_row.get("min_utilisation", math.nan) if ref_row else math.nan
        why = ("the fluid model fills every priced link; a queue that empties (buffer or RED thresholds small "
               "against the bandwidth-delay product of few flows) leaves capacity unused")
        if math.isfinite(uref) and uref < 0.95:
            why = ("the fluid model leaves it under-used too: its flows are held below the capacity by other "
                   "links or by random loss")
        lines.append(f"{name}: link {row.get('min_utilisation_link', '?')} carries {100 * u:.0f}% of its capacity"
                     f"{f' vs {ref} {100 * uref:.0f}%' if math.isfinite(uref) else ''}: {why}")
    ref_rtt = f" vs {ref} {_num(ref_row['mean_rtt_ms'])}" if ref_row else ""
    tx = row.get("transmission_ms", math.nan)
    tx_part = f" + transmission {_num(tx)}" if math.isfinite(tx) and tx >= 0.05 else ""
    lines.append(f"{name}: mean RTT {_num(row['mean_rtt_ms'])} ms{ref_rtt} (propagation {_num(row['base_rtt_ms'])}"
                 f"{tx_part} + queueing {_num(row['queue_ms'])})")
    extra = []
    if math.isfinite(row.get("retransmits", math.nan)):
        extra.append(f"retransmits {row['retransmits']:.0f}/flow")
    if math.isfinite(row.get("timeouts", math.nan)):
        extra.append(f"timeouts {row['timeouts']:.1f}/flow")
    if row.get("implausible_cwnd_samples"):
        extra.append(f"{row['implausible_cwnd_samples']:.0f} cwnd samples > 10^6 packets (not a window: "
                     f"the kernel/BPF reported a corrupt snd_cwnd) left out of the mean")
    for key, what in (("rwnd_limited", "receive-window"), ("sndbuf_limited", "send-buffer")):
        v = row.get(key, math.nan)
        if math.isfinite(v) and v > 0.01:
            extra.append(f"{what}-limited {100 * v:.0f}% of its busy time (tcp_info chrono): not window-limited")
    if math.isfinite(w) and w < 4:
        extra.append("window < 4 packets: losses are often recovered by timeout, not fast retransmit")
    full = row.get("window_full", math.nan)
    if math.isfinite(full) and full < 0.85:
        why = "upstream MPTCP's connection level not feeding it"
        nodata, rwnd = row.get("idle_no_data", math.nan), row.get("idle_rwnd_full", math.nan)
        if math.isfinite(nodata) and math.isfinite(rwnd):
            why = (f"the connection had no data to hand out in {100 * nodata:.0f}% of those samples (its send "
                   f"buffer holds every byte until the connection-level ACK) and its shared receive window was "
                   f"full in {100 * rwnd:.0f}%")
        extra.append(f"window full in only {100 * full:.0f}% of samples: the subflow had window room and nothing to "
                     f"send the rest of the time ({why}; a window that is not full does not grow — "
                     f"docs/testbed.md)")
    if extra:
        lines.append(f"{name}: " + "; ".join(extra))
    return lines
