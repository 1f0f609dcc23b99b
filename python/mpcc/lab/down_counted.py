"""Does the coupled rule count a route whose link is down? (issue 15 item 2's first suspect; CHURN.md §11)

From a churn.py run with --trace: every `mpcc_seen` record (the routes the rule last summed over, with
their windows: bpf/include/mpcc_walk.h) is placed in time (its ktime, the monotonic clock of the
schedule's executed events) and each of its routes on its path (the local port, from the same
snapshot's `ss`). A route counts as *down* when its path's link was down at that instant (the
schedule's link events; endpoint events do not take a link down). Reported, over the records of
connections that had a down route in the sum:

* how many records counted a down route, and by how long into the outage (0-0.2 s, 0.2-0.5 s,
  0.5-1 s, > 1 s),
* the down routes' share of the window sum in those records (median, and the share of records where it
  was above half),
* their windows (median; a window of 1 is what TCP leaves after the RTO, anything larger is the
  window of before the outage), and the records that counted a down window above 1 with its share.

    python -m mpcc.lab.down_counted RESULT.json TRACE [--json OUT]
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
import sys
from pathlib import Path

from mpcc.lab.churn_patterns import schedule
from mpcc.lab.stall_holders import path_of, result_cli

AGES = ((0.0, 0.2), (0.2, 0.5), (0.5, 1.0), (1.0, float("inf")))


def link_timeline(res: dict) -> dict[int, list[tuple[float, bool]]]:
    """path → [(monotonic s, link up after this instant)] from the run's executed link events."""
    plan = res.get("plan")
    if plan is None:           # runs before the plan was recorded: the pattern's own schedule
        if str(res["pattern"]).startswith("file "):
            raise ValueError(f"the run used {res['pattern']} and recorded no plan: re-run churn.py")
        plan = schedule(res["pattern"], res["secs"], res["seed"])
    out: dict[int, list] = {1: [], 2: [], 3: []}
    for (t, kind, path, on), (e0, e1) in zip(plan, res["executed"]):
        if kind == "link":
            out[path].append(((e0 + e1) / 2, bool(on)))
    return out


def down_since(timeline: list[tuple[float, bool]], m: float) -> float | None:
    """Seconds the link has been down at monotonic time m, or None if it was up."""
    k = bisect.bisect_right(timeline, (m, True)) - 1
    if k < 0 or timeline[k][1]:
        return None
    return m - timeline[k][0]


def analyse(res: dict, trace: Path) -> dict:
    links = link_timeline(res)
    n_records = n_down = 0
    by_age, big_by_age = [0] * len(AGES), [0] * len(AGES)
    shares, windows, over_half, big_shares = [], [], 0, []
    for ln in trace.read_text().splitlines():
        snap = json.loads(ln)
        port_path = {int(sf["local"].rsplit(":", 1)[1]): path_of(sf) for sf in snap["sf"]}
        for rec in snap.get("seen", {}).values():
            m = rec["ktime_ns"] / 1e9
            n = min(rec["n"], len(rec["lport"]))
            if n < 2:
                continue         # a single route: nothing coupled to count wrongly
            n_records += 1
            down_w, total, age, big = 0, 0, None, False
            for k in range(n):
                w, p = rec["cwnd"][k], port_path.get(rec["lport"][k])
                if w > 0x7fffffff:
                    w = 1        # not a window of ours (a skipped program's return): repaired before use
                total += w
                d = down_since(links[p], m) if p else None
                if d is not None and k != rec["self"]:
                    down_w += w
                    windows.append(w)
                    big |= w > 1
                    age = d if age is None else max(age, d)
            if age is None:
                continue
            n_down += 1
            i = next(i for i, (a, b) in enumerate(AGES) if a <= age < b)
            by_age[i] += 1
            share = down_w / total if total else 0.0
            shares.append(share)
            over_half += share > 0.5
            if big:
                big_shares.append(share)
                big_by_age[i] += 1
    return {"records_with_two_or_more_routes": n_records, "records_counting_a_down_route": n_down,
            "by_seconds_into_the_outage": {f"{a:g}-{b:g}": c for (a, b), c in zip(AGES, by_age)},
            "down_share_of_the_sum_median": round(statistics.median(shares), 3) if shares else None,
            "records_with_down_share_above_half": over_half,
            "down_route_window_median": statistics.median(windows) if windows else None,
            "down_routes_with_window_above_1": sum(w > 1 for w in windows), "down_routes": len(windows),
            "records_counting_a_down_window_above_1": len(big_shares),
            "their_down_share_median": round(statistics.median(big_shares), 3) if big_shares else None,
            "their_seconds_into_the_outage": {f"{a:g}-{b:g}": c for (a, b), c in zip(AGES, big_by_age)}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path, help="churn.py --json result (one run)")
    ap.add_argument("trace", type=Path, help="churn.py --trace file of the same run")
    ap.add_argument("--json", type=Path, help="write the summary here")
    a = ap.parse_args(argv)
    res = json.loads(a.result.read_text())
    res = res[0] if isinstance(res, list) else res
    out = {"algorithm": res["algorithm"], "date": res["date"], "sysctls": res.get("sysctls"), **analyse(res, a.trace)}
    print(json.dumps(out, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(result_cli(main, "down_counted"))
