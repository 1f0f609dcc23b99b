"""How long the kernel column of ``mpcc reproduce jiang2011`` runs (the model and the simulator
cost little; the kernel testbed runs in real time).

The report's ns-2 runs last 1200 s (Figs. 9–10, measured from 200 s) and 2000 s (Fig. 13). Two
budgets:

* :data:`QUICK` (the default): one short run per cell — utilisation at n = 2 and 4 with a
  20-packet buffer (Fig. 9) and at n = 2 with 84 packets (Fig. 10), flappiness at n = 2 —
  about six minutes of kernel time for the four variants.
* :data:`FULL` (``--kernel-budget full``): 3 runs per cell, 120 s (Figs. 9–10, n = 1…4, buffers
  10…84 packets) and 300 s (flappiness, n = 2, 3, 4): several hours.

A cell shorter than the report's run is marked † (:func:`.columns.setups`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..peng2016.budget import KernelRun

#: The report's run lengths (s): Figs. 9–10 and Fig. 13.
PAPER_UTIL_S, PAPER_FLAP_S = 1200.0, 2000.0


@dataclass(frozen=True)
class Budget:
    name: str
    util_cells: tuple[tuple[int, int], ...]  # (subflows n, buffer packets) of the Fig. 9/10 cells
    util: KernelRun
    flap_n: tuple[int, ...]  # subflows of the flappiness cells
    flap: KernelRun
    flap_loss: float = 0.002  # random loss per packet on every path (as the model's flappiness figure)

    def kernel_seconds(self, n_algorithms: int) -> float:
        """Real time the kernel column runs traffic (without set-up and tear-down)."""
        return n_algorithms * (len(self.util_cells) * self.util.runs * self.util.duration_s
                               + len(self.flap_n) * self.flap.runs * self.flap.duration_s)


QUICK = Budget("quick", ((2, 20), (4, 20), (2, 84)), KernelRun(1, 15.0, 4.0), (2,), KernelRun(1, 40.0, 5.0))

FULL = Budget("full", tuple((n, b) for b in (10, 20, 42, 84) for n in (1, 2, 3, 4)), KernelRun(3, 120.0, 20.0),
              (2, 3, 4), KernelRun(3, 300.0, 10.0))

BUDGETS = {"quick": QUICK, "full": FULL}
