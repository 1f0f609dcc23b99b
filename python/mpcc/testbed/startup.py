"""The start of a testbed run: the sender sets up every connection and subflow first
(:func:`mpcc.testbed.traffic.establish`), then reports ``t0``; flows start at t0 + start_s + a
start offset drawn as the simulator draws it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np

from ..scenario import Scenario


def budget_s(s: Scenario) -> float:
    """How long the engine waits for the sender's t0: the set-up phase's bound plus the Python
    start-up of both traffic processes."""
    from .traffic import connect_budget_s
    return connect_budget_s(sum(g.count for g in s.groups)) + 10.0


def setup_failure(run_dir: Path, budget: float) -> str:
    """The one-line message of a set-up that did not finish: the sender's last line (it names the
    group, flow, route and errno) and where every attempt's reason is."""
    try:
        why = [ln for ln in (run_dir / "sender.log").read_text().splitlines() if ln.strip()]
    except OSError:
        why = []
    what = why[-1] if why else f"connection set-up did not finish in {budget:.0f} s"
    return (f"testbed: {what} (fix: read {run_dir / 'sender.log'}; every attempt's reason is there and in "
            f"{run_dir / 'connect.json'})")


def start_offsets(s: Scenario, gi: int, seed: int) -> list[float]:
    """Each flow of group ``gi`` starts sending at start_s + U[0, jitter), jitter = the [sim]
    table's start_jitter_s capped at 10 % of the group's active time: the simulator's start
    (crates/mpcc-core/src/sim/mod.rs), so identical flows are desynchronised alike."""
    from ..scenario import engine_options
    g = s.groups[gi]
    active = max(0.0, min(g.stop_s, s.duration_s) - g.start_s)
    jitter = max(0.0, min(float(engine_options(s, "sim")["start_jitter_s"]), 0.1 * active))
    rng = np.random.default_rng([seed, gi])
    return [float(x) for x in rng.uniform(0.0, jitter, g.count)] if jitter > 0 else [0.0] * g.count


def wait_t0(sp: subprocess.Popen, deadline: float) -> float | None:
    """The sender's ``t0 <seconds>`` line, or None if it exited or the deadline passed first."""
    import select
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sp.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(sp.stdout.fileno(), 256)
            if not chunk:
                return None
            buf += chunk
            if b"\n" in buf:
                head = buf.split(b"\n", 1)[0].split()
                return float(head[1]) if len(head) == 2 and head[0] == b"t0" else None
        elif sp.poll() is not None:
            return None
    return None


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
