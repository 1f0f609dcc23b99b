"""Churn schedules of python/mpcc/lab/churn.py (issue 15 item 2): which endpoint is removed or
re-added and which link goes down or up, when. A schedule is a sorted list of
(time s, "endpoint" | "link", path 1–3, add/up); the same (pattern, secs, seed) always gives the
same list, so algorithms are compared under the same churn, and any other list can be given in a
file (load_schedule, churn.py --schedule)."""

from __future__ import annotations

import json
from pathlib import Path

PATTERNS = ("alternate", "random", "storm")


def schedule(pattern: str, secs: float, seed: int = 0) -> list[tuple[float, str, int, bool]]:
    """The churn as (time s, "endpoint" | "link", path, add/up), sorted by time; the same
    (pattern, secs, seed) always gives the same list, so algorithms are compared under the same churn.

    * ``alternate``: at every whole second the server's endpoint of path 2 is removed or re-added
      and path 3's link goes down or up (each stays so for one second).
    * ``random`` (from ``seed``): in every second, at a random instant, one endpoint event (remove
      a present endpoint of path 2 or 3, or re-add an absent one), and one link outage of a random
      path (1, 2 or 3 — also the path of the initial subflow) for 0.1–3 s, starting at a random
      instant. Outages may overlap; an event is skipped when it would leave no path that can carry
      data (the path-1 subflow or a present endpoint, over an up link), since then any connection
      must stall.
    * ``storm`` (from ``seed``): events at random intervals (exponential, mean 0.5 s, so often
      several within 100 ms); a link event takes a random set of paths (often two at once) down
      for 0.05–2 s; an endpoint event removes or re-adds any of the server's three addresses,
      path 1's too — the address of every connection's initial subflow (REMOVE_ADDR id 0), re-added
      as a signalled endpoint. Same rule: never no usable path.
    """
    import random
    if pattern not in PATTERNS:
        raise ValueError(f"--pattern {pattern!r}: use one of {', '.join(PATTERNS)}")
    n = int(secs)
    if pattern == "storm":
        return _storm(secs, random.Random(seed))
    if pattern == "alternate":
        out = []
        for k in range(1, n + 1):
            out.append((float(k), "endpoint", 2, k % 2 == 0))
            out.append((float(k), "link", 3, k % 2 == 0))
        return out
    rng = random.Random(seed)
    endpoint = {2: True, 3: True}
    down_until = {1: 0.0, 2: 0.0, 3: 0.0}
    out = []

    def usable(t, ep, down):
        return any(down[i] <= t and (i == 1 or ep[i]) for i in (1, 2, 3))

    for k in range(1, n):
        ev = sorted([(k + rng.random(), "endpoint"), (k + rng.random(), "link")])
        for t, kind in ev:
            t = round(t, 3)
            if kind == "endpoint":
                i = rng.choice((2, 3))
                ep = {**endpoint, i: not endpoint[i]}
                if all(usable(t + d / 10, ep, down_until) for d in range(31)):
                    endpoint = ep
                    out.append((t, "endpoint", i, ep[i]))
            else:
                i, dur = rng.choice((1, 2, 3)), round(rng.uniform(0.1, 3.0), 3)
                if down_until[i] > t:
                    continue                      # already down
                down = {**down_until, i: t + dur}
                if all(usable(t + d / 10, endpoint, down) for d in range(int(dur * 10) + 2)):
                    down_until = down
                    out.append((t, "link", i, False))
                    if t + dur < secs:
                        out.append((round(t + dur, 3), "link", i, True))
    return sorted(out)


def _storm(secs: float, rng) -> list[tuple[float, str, int, bool]]:
    """The ``storm`` pattern (see schedule): events at exponential intervals; a link event takes a
    random set of paths down together for 0.05–2 s; an endpoint event removes or re-adds any of the
    server's three addresses, the initial subflow's (path 1) included."""
    endpoint = {1: True, 2: True, 3: True}
    down_until = {1: 0.0, 2: 0.0, 3: 0.0}
    out = []

    def usable(t, ep, down):
        return any(down[i] <= t and ep[i] for i in (1, 2, 3))

    t = 0.0
    while True:
        t = round(t + rng.expovariate(2.0) + 0.01, 3)
        if t >= secs - 0.5:
            break
        if rng.random() < 0.5:
            i = rng.choice((1, 2, 3))
            ep = {**endpoint, i: not endpoint[i]}
            if all(usable(t + d / 10, ep, down_until) for d in range(31)):
                endpoint = ep
                out.append((t, "endpoint", i, ep[i]))
        else:
            paths = [i for i in (1, 2, 3) if rng.random() < 0.5 and down_until[i] < t] or \
                [i for i in (rng.choice((1, 2, 3)),) if down_until[i] < t]
            if not paths:
                continue
            dur = round(rng.uniform(0.05, 2.0), 3)
            down = {**down_until, **{i: t + dur for i in paths}}
            if all(usable(t + d / 20, endpoint, down) for d in range(int(dur * 20) + 2)):
                down_until = down
                for i in paths:
                    out.append((t, "link", i, False))
                    if t + dur < secs:
                        out.append((round(t + dur, 3), "link", i, True))
    return sorted(out)


def load_schedule(path: Path, secs: float) -> list[tuple[float, str, int, bool]]:
    """A churn schedule from a JSON file: a list of [time s, "endpoint" | "link", path 1–3, add/up]
    (any pattern, e.g. one this harness has never seen). Raises ValueError naming the entry."""
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"--schedule {path}: not readable JSON ({e}); give a list of [t, kind, path, on]")
    if not isinstance(rows, list):
        raise ValueError(f"--schedule {path}: the file must hold a JSON list of [t, kind, path, on]")
    out = []
    for k, r in enumerate(rows):
        # exact types: a JSON true is a Python int, and must not pass as a time or a path
        ok = (isinstance(r, list) and len(r) == 4 and type(r[0]) in (int, float) and 0 <= r[0] <= secs
              and r[1] in ("endpoint", "link") and type(r[2]) is int and r[2] in (1, 2, 3) and type(r[3]) is bool)
        if not ok:
            raise ValueError(f"--schedule {path}: entry {k} = {r!r}: use [t (0–{secs:g} s), "
                             f"\"endpoint\" or \"link\", path 1, 2 or 3, true (add/up) or false]")
        out.append((float(r[0]), r[1], r[2], r[3]))
    return sorted(out)
