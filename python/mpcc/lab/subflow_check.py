"""The coupled rule's subflow set against the kernel's (python/mpcc/lab/churn.py --trace): in every
per-second snapshot, the subflows the rule last summed over (the programs' mpcc_seen record) and the
subflows ``ss`` shows able to send for the same connection at the same instant must be the same set,
except where a churn event, a join completing between the two reads, or the path manager (its log)
can change the set in between. Pure: reads a trace file and returns counts (tests/kernel/test_churn.py)."""

from __future__ import annotations

import json
from pathlib import Path


def can_send(sf: dict) -> bool:
    """Would the coupled rule count this subflow (ss's view)? As mpcc_gather in mpcc_kern.h and
    upstream's __mptcp_subflow_active: ESTABLISHED or CLOSE_WAIT, not a join whose handshake is
    pending (flag j without e), with an RTT sample."""
    return (sf["state"] in ("ESTAB", "CLOSE-WAIT") and not ("j" in sf.get("flags", "") and "e" not in sf.get("flags", ""))
            and float(sf.get("rtt", "0/0").split("/")[0]) > 0)


def _join_completed_between(sf: dict | None, in_walk: bool, walk: float, ss_start: float,
                            sendable_before: bool) -> bool:
    """Does a join's own handshake, completing between the walk and ss's read, explain that the two
    disagree on this subflow? Yes when ss shows an MP_JOIN subflow (flag j) ESTABLISHED and either
    - the walk came after ss began reading, counted it (or found it silent), and ss shows its
      handshake still pending (no flag e): fully_established never goes back, so it completed
      between the two reads; or
    - the walk came before ss began reading, left it out, ss shows it fully established (e), and
      the connection's previous snapshot did not show it able to send (a new join).
    Both happen when many joins complete at once. Anything else stays a mismatch."""
    if sf is None or sf["state"] != "ESTAB" or "j" not in sf.get("flags", ""):
        return False
    established = "e" in sf.get("flags", "")
    if in_walk:
        return walk > ss_start and not established
    return walk < ss_start and established and not sendable_before


def pm_subflow_events(log: Path) -> dict[str, list[float]]:
    """A path manager's log (mpcc.pm --log) → for each connection (token, hex as in
    ss and mpcc_seen) the monotonic times at which it sent a join or a subflow established or closed:
    the instants at which that connection's subflow set may legitimately change."""
    lines = [json.loads(ln) for ln in log.read_text().splitlines() if ln.strip()] if log.exists() else []
    t0 = next((e["monotonic"] for e in lines if e.get("ev") == "start"), None)
    out: dict[str, list[float]] = {}
    if t0 is None:
        return out
    for e in lines:
        if e.get("ev") in ("join", "sub_established", "sub_closed") and "token" in e:
            out.setdefault(f"{e['token']:x}", []).append(t0 + e["t"])
    return out


def check_subflow_sets(trace: Path, done: list[tuple[float, float]], slack_s: float = 0.2,
                       quiet_s: float = 0.5, conn_events: dict[str, list[float]] | None = None) -> dict:
    """Compare, in every snapshot, the subflow set the coupled rule last summed over (mpcc_seen:
    local ports) with the subflows ss shows for the same connection that can send (can_send),
    plus the subflow whose callback made the walk (it counts itself in any state). The routes the
    walk found silent (ACKs stopped with data in flight, mpcc_walk.h) are listed apart in the record:
    the walk's view is the counted ∪ the silent ones, and a silent route must be one ss shows with
    unacknowledged data (else it is counted in silent_without_unacked; ss reads up to slack_s later,
    so an ACK may have come in between).
    A connection is compared when the rule's walk happened while ss was reading (± slack_s) and no
    churn event (done: (start, end) monotonic times of each executed event) lies between quiet_s
    before the earlier and the later of the two reads (a subflow can legitimately appear or close
    between them then). foreign_port_records counts simultaneous records (events or not) holding a
    port that ss shows on another connection. A difference made only by joins whose handshake
    completed between the two reads, in the order of the reads (_join_completed_between), is
    counted as join_completed_between, not as a mismatch. conn_events (pm_subflow_events): a
    connection whose path manager joined, or saw a subflow establish or close, in the same interval
    is skipped as skipped_near_pm_event. Returns counts and the first mismatches."""
    compared = skipped_time = skipped_event = walker_closing = foreign = silent_n = silent_unacked0 = 0
    skipped_pm = 0
    join_between = 0
    mismatches = []
    prev_sendable: dict[str, set[int]] = {}   # token -> ports ss showed able to send, last snapshot
    for line in trace.read_text().splitlines():
        snap = json.loads(line)
        a, b = (x / 1e9 for x in snap["ss_ns"])
        by_token = {}
        for sf in snap["sf"]:
            by_token.setdefault(sf["token"], []).append(sf)
        others = {int(sf["local"].rsplit(":", 1)[1]) for sf in snap["sf"]}   # ports of any connection
        for msk in snap["msk"].values():
            seen = snap.get("seen", {}).get(msk["token"].lstrip("0") or "0")
            walk = seen["ktime_ns"] / 1e9 if seen else None
            if walk is None or not (a - slack_s <= walk <= b + slack_s):
                skipped_time += 1
                continue
            # a port ss shows on another connection at the same instant: a torn record (two walks
            # mixed in the per-CPU scratch; mpcc_gather drops those, except in OLIA's build, whose
            # stack has no room for the check), whatever the churn did: counted, not compared
            own = {int(sf["local"].rsplit(":", 1)[1]) for sf in by_token.get(msk["token"], [])}
            if any(p not in own and p in others for p in seen["lport"]):
                foreign += 1
                continue
            lo, hi = min(a, walk) - quiet_s, max(b, walk)
            if any(e0 <= hi and (e1 or e0) >= lo for e0, e1 in done):
                skipped_event += 1
                continue
            if conn_events and any(lo <= t <= hi for t in conn_events.get(msk["token"].lstrip("0") or "0", ())):
                skipped_pm += 1
                continue
            compared += 1
            subflows = by_token.get(msk["token"], [])
            port = {int(sf["local"].rsplit(":", 1)[1]): sf for sf in subflows}
            ss_set = {p for p, sf in port.items() if can_send(sf)}
            rule_set = set(seen["lport"])
            silent = set(seen.get("silent", []))
            silent_n += len(silent)
            silent_unacked0 += sum(1 for p in silent if p in port and float(port[p].get("unacked", 0)) == 0)
            # the subflow whose callback walked always counts itself (mpcc_gather: its own window is
            # what the rule computes), also while it closes; ss may show it in FIN-WAIT-1, LAST-ACK...
            walker = seen["lport"][seen["self"]] if seen["self"] < len(seen["lport"]) else None
            if walker is not None:
                ss_set.add(walker)
                walker_closing += walker in port and not can_send(port[walker])
            view = rule_set | silent
            if view != ss_set and not rule_set & silent and all(
                    _join_completed_between(port.get(p), p in view, walk, a, p in prev_sendable.get(msk["token"], ()))
                    for p in view ^ ss_set):
                join_between += 1
            elif view != ss_set or rule_set & silent:
                mismatches.append({"t": snap["t"], "token": msk["token"], "walker": walker, "rule": sorted(rule_set),
                                   "silent": sorted(silent),
                                   "ss": sorted(ss_set), "ss_all": [(sf["local"], sf["state"], sf.get("flags"))
                                                                   for sf in subflows]})
        prev_sendable = {tok: {int(sf["local"].rsplit(":", 1)[1]) for sf in sfs if can_send(sf)}
                         for tok, sfs in by_token.items()}
    return {"compared": compared, "mismatched": len(mismatches), "join_completed_between": join_between,
            "skipped_not_simultaneous": skipped_time,
            "skipped_near_event": skipped_event, "skipped_near_pm_event": skipped_pm,
            "walker_not_sendable": walker_closing,
            "foreign_port_records": foreign, "silent_routes": silent_n, "silent_without_unacked": silent_unacked0,
            "first_mismatches": mismatches[:10]}
