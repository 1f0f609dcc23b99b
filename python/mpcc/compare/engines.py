"""Run one scenario on each engine through its public API; an engine that cannot run (no root,
no BPF, a feature it does not support, no fluid model) becomes an :class:`EngineRun` with
``error`` set, so the other engines' columns are kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import MpccError
from ..results import RunResult
from ..scenario import Scenario

ENGINES = ("fluid", "sim", "sim-linux", "testbed")

#: The simulator's engines and the connection level each runs (``[sim] mptcp``).
SIM_MODES = {"sim": "ideal", "sim-linux": "linux"}


@dataclass
class EngineRun:
    engine: str
    result: RunResult | None = None
    error: str | None = None
    #: engine detail the diagnosis reads: fluid Equilibrium, list of SimRun, testbed Summary list
    detail: Any = None

    @property
    def ok(self) -> bool:
        return self.result is not None


def run_fluid(s: Scenario) -> EngineRun:
    from .. import fluid
    eq = fluid.equilibrium(s)
    return EngineRun("fluid", fluid.to_result(s, eq), detail=eq)


def with_mptcp(s: Scenario, mode: str) -> Scenario:
    """``s`` with ``[sim] mptcp = mode``. The linux mode's ``sndbuf_expand``, unless the scenario
    sets it, is that of the programs the testbed loads (MPCC_BPF_CONN with sndbuf: "mpcc"), and
    its ``sndbuf_per_mss`` that of this machine's kernel where it can be measured (root), and
    its ``receiver`` that of the testbed's receivers (``[testbed] receiver = "quickack"``: every
    segment ACKed, the simulator's "simple"), so that sim-linux predicts the kernel it runs beside."""
    import dataclasses
    import os
    table = {**(s.engine.get("sim") or {}), "mptcp": mode}
    if mode == "linux" and "sndbuf_expand" not in table:
        from ..kernel.sources import CONN_MECHANISMS, conn_mask
        sndbuf = conn_mask(os.environ.get("MPCC_BPF_CONN")) & CONN_MECHANISMS["sndbuf"]
        table["sndbuf_expand"] = "mpcc" if sndbuf else "kernel"
    if mode == "linux" and "sndbuf_per_mss" not in table:
        from ..testbed.tcpmem import sim_per_mss_or_none
        if (per_mss := sim_per_mss_or_none(s.packet_bytes)) is not None:
            table["sndbuf_per_mss"] = per_mss
    if mode == "linux" and table.get("receiver", "auto") == "auto":
        from ..options import RECEIVER_SIM
        table.update(RECEIVER_SIM.get((s.engine.get("testbed") or {}).get("receiver", "linux"), {}))
    return dataclasses.replace(s, engine={**s.engine, "sim": table})


def run_sim(s: Scenario, runs: int, seed: int, name: str = "sim") -> EngineRun:
    from .. import sim
    many = sim.run_many(with_mptcp(s, SIM_MODES[name]), runs=runs, seed=seed, progress=False)
    result = many.result if runs > 1 else many[0].result
    return EngineRun(name, result, detail=list(many))


def run_testbed(s: Scenario, runs: int, seed: int) -> EngineRun:
    from ..testbed import engine as tb
    st = tb.settings_from(s, runs=runs, seed=max(seed, 0))
    result, summaries = tb.run_detailed(s, st, None, progress=False)
    warmup = st.warmup_s if st.warmup_s is not None else min(10.0, 0.2 * (st.duration_s or s.duration_s))
    return EngineRun("testbed", result, detail={"summaries": summaries, "warmup_s": warmup,
                                                "duration_s": st.duration_s or s.duration_s})


def run_engine(name: str, s: Scenario, *, runs: int = 1, seed: int = 0) -> EngineRun:
    """Run engine ``name``; an :class:`~mpcc.errors.MpccError` (including EnvironmentProblem)
    is recorded as the engine's error instead of propagating."""
    try:
        if name == "fluid":
            return run_fluid(s)
        if name in SIM_MODES:
            return run_sim(s, runs, seed, name)
        if name == "testbed":
            return run_testbed(s, runs, seed)
    except MpccError as e:
        return EngineRun(name, error=str(e).splitlines()[0])
    raise MpccError(f"--engines: unknown engine {name!r} (fix: use a comma-separated list of {', '.join(ENGINES)})")


def parse_engines(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise MpccError("--engines: empty list (fix: e.g. --engines fluid,sim)")
    for n in names:
        if n not in ENGINES:
            raise MpccError(f"--engines: unknown engine {n!r} (fix: use a comma-separated list of {', '.join(ENGINES)})")
    if len(set(names)) != len(names):
        raise MpccError("--engines: an engine is listed twice (fix: list each engine once)")
    return names
