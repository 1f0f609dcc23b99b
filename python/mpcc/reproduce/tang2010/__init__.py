"""Tang, Wei, Low, Chiang (ToN 2010), "Equilibrium of heterogeneous congestion control":
``mpcc reproduce tang2010`` and ``mpcc hetero example1 … example4``.

One module per example, built on the public APIs of :mod:`mpcc.hetero` (the analytic model) and
:mod:`mpcc.hetero.packet` / :mod:`mpcc.sim` (packet level); published values in :mod:`.paper`.

``example3(out_dir)``, ``example4(trials, workers, progress)`` (:mod:`.example3`, :mod:`.example4`);
``example1(scenario_dir, …)`` with ``calibrate_w`` (:mod:`.example1`), ``example2(scenario_dir, …)``
(:mod:`.example2`), both on :mod:`.packet`; ``example2_model(path)`` and its parts
(:mod:`.example2_model`). All return plain dicts. Import them from their module
(``from mpcc.reproduce.tang2010.example1 import example1``).
"""
