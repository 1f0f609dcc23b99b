"""mpcc — multipath congestion control you can model, simulate and run in the Linux kernel.

Three engines share one scenario format (:mod:`mpcc.scenario`) and one definition of each
algorithm (:mod:`mpcc.algorithms`):

* :mod:`mpcc.fluid`   — the fluid/equilibrium model of Peng, Walid, Hwang, Low (eqs. 3–4, 7–9)
* :mod:`mpcc.sim`     — packet-level discrete-event simulator (Rust core)
* :mod:`mpcc.testbed` — BPF struct_ops congestion control on upstream Linux MPTCP
"""

__version__ = "0.1.0"
