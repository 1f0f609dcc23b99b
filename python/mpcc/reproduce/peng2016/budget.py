"""How long each engine runs each experiment of ``mpcc reproduce peng2016``.

The paper repeats every experiment 20 times, 100 s each (Table V: 200 s). The fluid model costs
nothing and the simulator little, but the kernel testbed runs in real time: the paper's lengths
take hours. Two budgets:

* :data:`QUICK` (the default, ``make reproduce``): every engine, every table, in about ten
  minutes on a fresh clone of a 2-core machine, set-up included — 5 simulator seeds per cell at
  the paper's lengths; on the kernel the traffic goes where the paper's claims are: Table III's
  MP/SP order gets several runs per cell (its 95 % CIs are over runs), Tables IV, V and Fig. 3 one
  short run each (Table V scaled down: the single-path flows join for 5 s and the convergence
  time is observed for 10 s). All runs of a table share one network (:class:`mpcc.testbed.engine.Testbed`),
  so a run costs its traffic plus :data:`RUN_OVERHEAD_S`.
* :data:`FULL` (``--full``, ``make reproduce FULL=1``): the paper's 20 runs at the paper's lengths.

A cell whose setup is shorter than the paper's is marked in every table (:func:`setups`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelRun:
    """Length of one kernel experiment: ``runs`` × ``duration_s`` (the first ``warmup_s`` not measured)."""

    runs: int
    duration_s: float
    warmup_s: float


@dataclass(frozen=True)
class Table5Run:
    """Kernel Table V: reference window over ``reference_s``, single-path flows during ``sp_s``,
    convergence observed for ``tail_s`` after they leave."""

    runs: int
    reference_s: tuple[float, float]
    sp_s: tuple[float, float]
    tail_s: float

    @property
    def duration_s(self) -> float:
        return self.sp_s[1] + self.tail_s


@dataclass(frozen=True)
class Budget:
    name: str
    sim_runs: int            # simulator seeds per cell (paper lengths)
    fig3_sim_runs: int
    table3: KernelRun
    table4: KernelRun
    table5: Table5Run
    fig3: KernelRun          # one run per algorithm (runs is 1)

    def kernel_seconds(self, n_algorithms: int) -> float:
        """Real time the kernel column runs traffic (without set-up and tear-down)."""
        per = (self.table3.runs * self.table3.duration_s + self.table4.runs * self.table4.duration_s
               + self.table5.runs * self.table5.duration_s)
        return n_algorithms * per + (n_algorithms + 1) * self.fig3.duration_s

    def kernel_runs(self, n_algorithms: int) -> int:
        """Runs of the kernel column (Fig. 3 adds the Reno cell)."""
        return n_algorithms * (self.table3.runs + self.table4.runs + self.table5.runs) + (n_algorithms + 1) * self.fig3.runs

    def kernel_wall_s(self, n_algorithms: int) -> float:
        """Expected wall time of the kernel column: traffic plus :data:`RUN_OVERHEAD_S` per run."""
        return self.kernel_seconds(n_algorithms) + self.kernel_runs(n_algorithms) * RUN_OVERHEAD_S


#: Wall time of a kernel run beyond its traffic in a session that reuses the network: the
#: traffic processes' start margin (2 s), their stop, the linkem restart and the summary
#: (measured for Table III: 3.1–3.2 s; with a network per run 3.0–3.6 s; bench/testbed/RESULTS.md).
RUN_OVERHEAD_S = 3.2


#: ``make reproduce``: about ten minutes on a fresh clone (≈ 8.9 min of kernel column: 49 runs,
#: 7.3 min of traffic). Table III: 5 runs × 6 s after a 2 s warm-up per algorithm — CIs over runs;
#: in 10 s runs (2026-11-28, bench/testbed/RESULTS.md) EWTCP's MP rate per run had a standard
#: deviation of 0.09 Mb/s and Coupled's 0.07 over 4–5 s windows, 0.36–0.38 Mb/s apart (4–5 SD): with
#: 5 runs the two 95 % CIs separate in ≥ 99 % of repetitions (3 runs: 55 %, 4: 88–93 %). Table IV
#: 6 s after 2 s (one flow; every algorithm fills both paths), Table V Reno flows for 4 s (5 flows on
#: a 20 ms-RTT link settle within 1–2 s) after a 4 s reference window, and 10 s of convergence (the
#: kernel's LIA/Balia converge in 8–10 s, EWTCP and semicoupled in 2–5 s), Fig. 3 6 s after 2 s.
QUICK = Budget("quick", 5, 3, KernelRun(5, 6.0, 2.0), KernelRun(1, 6.0, 2.0),
               Table5Run(1, (2.0, 6.0), (6.0, 10.0), 10.0), KernelRun(1, 6.0, 2.0))

#: ``make reproduce FULL=1``: the paper's lengths (the kernel column runs 13.5 h of traffic).
FULL = Budget("full", 20, 5, KernelRun(20, 100.0, 10.0), KernelRun(20, 100.0, 10.0),
              Table5Run(20, (10.0, 40.0), (40.0, 80.0), 120.0), KernelRun(1, 60.0, 10.0))

BUDGETS = {"quick": QUICK, "full": FULL}


def _runs(n: int, seconds: float) -> str:
    return f"{n} run{'s' if n != 1 else ''} × {seconds:g} s"


def setups(b: Budget) -> dict[str, dict[str, dict]]:
    """``{table: {source: {"text": …, "shortened": bool}}}`` for the sim and kernel columns;
    ``shortened`` when fewer or shorter runs than the paper's (Tables III–V: 20 × 100 s, Table V
    20 × 200 s) or, for Fig. 3, than :data:`FULL`."""
    from .paper import F3, T3, T4, T5

    f = FULL
    ref = {T3: ("paper", 20, 100.0), T4: ("paper", 20, 100.0), T5: ("paper", 20, 200.0),
           F3: ("full", f.fig3_sim_runs, 60.0)}
    sim = {T3: (b.sim_runs, 100.0), T4: (b.sim_runs, 100.0), T5: (b.sim_runs, 200.0), F3: (b.fig3_sim_runs, 60.0)}
    kern = {T3: (b.table3.runs, b.table3.duration_s), T4: (b.table4.runs, b.table4.duration_s),
            T5: (b.table5.runs, b.table5.duration_s), F3: (1, b.fig3.duration_s)}
    kref = {**ref, F3: ("full", 1, f.fig3.duration_s)}
    out: dict[str, dict[str, dict]] = {}
    for t in (T3, T4, T5, F3):
        out[t] = {}
        for source, (n, secs), (who, rn, rs) in (("sim", sim[t], ref[t]), ("testbed", kern[t], kref[t])):
            short = n < rn or secs < rs
            text = _runs(n, secs)
            if t == T5 and source == "testbed":
                tb = b.table5
                text += f" (SP flows {tb.sp_s[0]:g}–{tb.sp_s[1]:g} s, convergence observed ≤ {tb.tail_s:g} s)"
            if short:
                text += f"; {who}: {_runs(rn, rs)}"
            out[t][source] = {"text": text, "shortened": short}
    return out
