"""Health of a kernel run: what, besides the congestion controls under test, could have touched
its numbers. Counted per run, from the run's own records:

``bpf_repairs``          evidence of struct_ops programs the platform skipped, repaired by the
                         compat layer or not, during the run (``mpcc.kernel.bpf.health_counters()``
                         after − before, summed; each kind in ``bpf_counters``; None = not
                         measured: the default build is loaded, or the loader does not offer them).
``bpf_unrepaired``       of those, the kinds :data:`BPF_UNREPAIRED` names: skips whose effect the
                         compat layer could not undo (ACKs that reached no cong_control, a rate
                         sample it could not read, a skipped init).
``implausible_windows``  sender samples (tcp_info of one subflow) whose window no path could
                         hold: cwnd or ssthresh above TCP_INFINITE_SSTHRESH (0x7fffffff; a skipped
                         ssthresh() returns stack garbage such as 0x81104110), or cwnd above
                         :func:`window_bound` of the subflow's route.
``connect_retries``      connection attempts beyond the first in the set-up phase (before t0;
                         informational: a connection retried before the clock starts touches no
                         measured number).
``subflows_not_joined``  routes of a connection without an established subflow at t0.
``linkem_tx_errors``     frames linkem could not send (its stats CSV, both directions, all links).
``linkem_late``          releases at least 1 ms after their schedule (linkem ``--timing``
                         ``over_1ms``), of ``linkem_releases``; None = the linkem build does not
                         report it.

Verdict: a run is *sound* when bpf_unrepaired (if measured), implausible_windows,
subflows_not_joined and linkem_tx_errors are 0 and linkem_late ≤ :data:`LATE_SHARE` of the
releases. Otherwise it is unsound, with one reason per failed criterion. A repaired skip restores
the algorithm's own value and does not make a run unsound by itself; one whose damage reached a
window shows as an implausible window.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

TCP_INFINITE_SSTHRESH = 0x7FFFFFFF
#: health_counters() kinds that record a skip the compat layer did not repair (bpf/compat/mpcc_records.h)
BPF_UNREPAIRED = ("unseen_delivery_runs", "rate_sample_unreadable", "init_skipped")
#: A release ≥ 1 ms late delays that packet by a tenth of a 10 ms link; up to 1 in 1,000 such
#: releases moves a run's rates by far less than its confidence interval.
LATE_SHARE = 1e-3
#: Runs of a cell after the first when a run's verdict is unsound (``run_healthy``).
EXTRA_ATTEMPTS = 2


def window_bound(s, gi: int, route: int) -> float:
    """The largest congestion window (packets) a subflow of route ``route`` of group ``gi`` could
    plausibly reach: 4 × (bandwidth-delay product + buffers of the route) + 100, with the BDP at
    the route's tightest capacity and its two-way propagation delay. A window above it has grown
    far past anything the path ever acknowledged."""
    links = {l.name: l for l in s.links}
    path = [links[n] for n in s.groups[gi].paths[route]]
    rtt_s = 2 * sum(l.delay_ms for l in path) / 1e3
    bdp = min(l.capacity_mbps for l in path) * 1e6 * rtt_s / (8 * s.packet_bytes)
    return 4 * (bdp + sum(l.buffer_pkts for l in path)) + 100


def implausible_windows(s, sender: np.ndarray) -> int:
    """Sender samples with an implausible window (module docstring)."""
    if len(sender) == 0:
        return 0
    bad = (sender["cwnd"] > TCP_INFINITE_SSTHRESH) | (sender["ssthresh"] > TCP_INFINITE_SSTHRESH)
    bounds = {(gi, j): window_bound(s, gi, j) for gi, g in enumerate(s.groups) for j in range(len(g.paths))}
    lim = np.array([bounds.get((int(g), int(r)), np.inf) for g, r in zip(sender["group"], sender["route"])])
    return int(np.count_nonzero(bad | (sender["cwnd"] > lim)))


def bpf_counters() -> dict[str, int] | None:
    """``mpcc.kernel.bpf.health_counters()`` if the loader offers it, else None."""
    try:
        from ..kernel import bpf
    except Exception:
        return None
    fn = getattr(bpf, "health_counters", None)
    if fn is None:
        return None
    try:
        out = fn()
    except Exception:
        return None
    return dict(out) if out is not None else None


def counter_deltas(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int] | None:
    """Per-kind increase of monotonic counters (mod 2^64), None if either side is not measured."""
    if before is None or after is None:
        return None
    return {k: (int(after[k]) - int(before.get(k, 0))) % (1 << 64) for k in after}


def counter_delta(before: dict[str, int] | None, after: dict[str, int] | None) -> int | None:
    d = counter_deltas(before, after)
    return None if d is None else int(sum(d.values()))


def linkem_timing(paths: list[Path]) -> tuple[int | None, int]:
    """(releases ≥ 1 ms late or None if a file lacks the count, releases) over linkem timing files."""
    late, n, known = 0, 0, True
    for p in paths:
        try:
            t = json.loads(Path(p).read_text())
        except (OSError, ValueError):
            known = False
            continue
        for d in ("fwd", "rev"):
            rl = (t.get(d) or {}).get("release_late") or {}
            n += int(rl.get("n", 0))
            if "over_1ms" in rl:
                late += int(rl["over_1ms"])
            else:
                known = False
    return (late if known else None), n


def linkem_tx_errors(links: dict[str, np.ndarray]) -> int:
    total = 0
    for rows in links.values():
        for d in ("fwd", "rev"):
            r = rows[rows["dir"] == d]
            if len(r):
                total += int(r["tx_errors"][-1])
    return total


@dataclass
class Health:
    bpf_repairs: int | None = None
    bpf_unrepaired: int | None = None
    bpf_counters: dict[str, int] | None = None
    implausible_windows: int = 0
    connect_retries: int = 0
    subflows_not_joined: int = 0
    linkem_tx_errors: int = 0
    linkem_late: int | None = None
    linkem_releases: int = 0
    reasons: list[str] = field(default_factory=list)
    #: the reasons of the attempts of this run that were unsound and run again (healthy_run)
    discarded: list[list[str]] = field(default_factory=list)

    @property
    def sound(self) -> bool:
        return not self.reasons

    def judge(self) -> "Health":
        r = []
        if self.bpf_unrepaired:
            r.append(f"{self.bpf_unrepaired} BPF program skips not repaired")
        if self.implausible_windows:
            r.append(f"{self.implausible_windows} samples with an implausible window")
        if self.subflows_not_joined:
            r.append(f"{self.subflows_not_joined} subflows never joined")
        if self.linkem_tx_errors:
            r.append(f"{self.linkem_tx_errors} linkem send errors")
        if self.linkem_late is not None and self.linkem_late > LATE_SHARE * max(1, self.linkem_releases):
            r.append(f"{self.linkem_late} of {self.linkem_releases} linkem releases ≥ 1 ms late "
                     f"(limit {LATE_SHARE:g})")
        self.reasons = r
        return self

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "sound": self.sound}


def of_run(s, raw, bpf_before: dict | None = None, bpf_after: dict | None = None,
           timing_files: list[Path] | None = None) -> Health:
    """The health of one run from its RawRun (engine.RawRun) and the counters around it."""
    c = raw.connect or {}
    late, n = linkem_timing(timing_files or [])
    d = counter_deltas(bpf_before, bpf_after)
    return Health(bpf_repairs=None if d is None else sum(d.values()), bpf_counters=d,
                  bpf_unrepaired=None if d is None else sum(d.get(k, 0) for k in BPF_UNREPAIRED),
                  implausible_windows=implausible_windows(s, raw.sender),
                  connect_retries=int(c.get("retries", 0)),
                  subflows_not_joined=int(c.get("subflows_not_joined", 0)),
                  linkem_tx_errors=linkem_tx_errors(raw.links),
                  linkem_late=late, linkem_releases=n).judge()


def aggregate(runs: list[dict[str, Any]], attempts: int | None = None) -> dict[str, Any]:
    """A cell's health from its runs' records: the sums, sound = every run sound, the reasons of
    the unsound runs, and how many attempts the cell took (unsound runs retried included)."""
    def total(k):
        vals = [r.get(k) for r in runs]
        return None if any(v is None for v in vals) or not vals else int(sum(vals))
    out: dict[str, Any] = {k: total(k) for k in ("bpf_repairs", "bpf_unrepaired", "implausible_windows",
                                                  "connect_retries",
                                                  "subflows_not_joined", "linkem_tx_errors", "linkem_late",
                                                  "linkem_releases")}
    out["sound"] = all(r.get("sound", False) for r in runs) and bool(runs)
    out["reasons"] = [f"run {i}: {x}" for i, r in enumerate(runs) for x in r.get("reasons", [])]
    out["runs"] = runs
    out["attempts"] = attempts if attempts is not None else len(runs)
    return out


def line(h: dict[str, Any] | None) -> str:
    """One line for compare / REPORT: ``health: sound (3 runs, 1 retried; bpf repairs 0, …)``."""
    if not h:
        return "health: not measured"
    nm = lambda v: "not measured" if v is None else str(v)  # noqa: E731
    runs = len(h.get("runs", [])) or 1
    extra = int(h.get("attempts", runs)) - runs
    head = "sound" if h.get("sound") else "UNSOUND"
    why = "" if h.get("sound") else " — " + "; ".join(h.get("reasons", [])[:3])
    return (f"health: {head} ({runs} runs{f', {extra} re-run unsound' if extra else ''}; "
            f"bpf repairs {nm(h.get('bpf_repairs'))} (unrepaired {nm(h.get('bpf_unrepaired'))}), implausible windows {h.get('implausible_windows', 0)}, "
            f"connect retries {h.get('connect_retries', 0)}, subflows not joined {h.get('subflows_not_joined', 0)}, "
            f"linkem late {nm(h.get('linkem_late'))}/{h.get('linkem_releases', 0)}, "
            f"tx errors {h.get('linkem_tx_errors', 0)}){why}")


def run_healthy(attempt: Callable[[int], tuple[Any, Health]], extra_attempts: int = EXTRA_ATTEMPTS,
                warn: Callable[[str], None] | None = None) -> tuple[Any, Health, int]:
    """Call ``attempt(k)`` (k = 0, 1, …) until its health is sound, at most 1 + ``extra_attempts``
    times. Returns the first sound attempt's value, or the last one if none was sound (its
    Health says why), and the number of attempts."""
    seen: list[list[str]] = []
    for k in range(1 + extra_attempts):
        value, h = attempt(k)
        h.discarded = list(seen)
        if h.sound:
            return value, h, k + 1
        seen.append(list(h.reasons))
        if warn and k < extra_attempts:
            warn(f"run unsound ({'; '.join(h.reasons)}); running it again ({k + 1} of {extra_attempts})")
    h.discarded = seen[:-1]
    return value, h, 1 + extra_attempts


def healthy_run(run: Callable[[Path], Any], run_dir: Path, extra_attempts: int = EXTRA_ATTEMPTS) -> tuple[Any, int]:
    """``run(dir)`` (a RawRun with ``.health``) in ``run_dir``, again in ``run_dir``-again1, -again2
    … while its health is unsound (:func:`run_healthy`); returns the run kept and the attempts."""
    import sys

    def attempt(k):
        raw = run(run_dir if k == 0 else run_dir.with_name(f"{run_dir.name}-again{k}"))
        return raw, raw.health if raw.health is not None else Health().judge()
    raw, _, n = run_healthy(attempt, extra_attempts, warn=lambda m: print(f"mpcc testbed: {m}", file=sys.stderr))
    return raw, n
