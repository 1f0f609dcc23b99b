"""Multipath transmission control of Jiang, Cai, Towsley (UM-CS-2011-005); see docs/mtc.md.

* :mod:`.utilization` — closed forms (6), (8), (10)–(13) and Table 1 (link utilization);
* :mod:`.cycles` — deterministic-drop fluid simulation and the Assumption-2 orbit solver;
* :mod:`.equilibrium` — §4.1 Cases 1–4 and the ODE (15) solver;
* :mod:`.flappiness` — the flappiness metric and the per-RTT stochastic window model.

The report's figures, §5 scenario files and paper-vs-ours table: :mod:`mpcc.reproduce.jiang2011`.
"""

# Submodules are imported by name (their names are also function names, so nothing is re-exported).
