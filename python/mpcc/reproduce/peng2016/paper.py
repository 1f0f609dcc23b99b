"""Published numbers the reproductions are compared with (transcribed from the papers' tables).

Peng, Walid, Hwang, Low, "Multipath TCP: Analysis, Design and Implementation", IEEE/ACM ToN:
Tables III–V (Linux 3.11 + MPTCP v0.88 on a Dummynet testbed, 20 runs, 95 % CI margins).
"""

#: Column order of the paper's tables (Max is LIA).
PENG_COLUMNS = ("ewtcp", "semicoupled", "lia", "balia", "coupled", "olia")

#: Table III — average per-flow throughput (Mb/s) and 95 % CI margin; Fig. 2 network,
#: T1 = T2 = 5 ms, c1 = c2 = 60 Mb/s, N1 = N2 = 30.
PENG_TABLE3 = {
    "mp": {"ewtcp": (2.75, 0.005), "semicoupled": (2.65, 0.004), "lia": (2.60, 0.005),
           "balia": (2.52, 0.006), "coupled": (2.44, 0.005), "olia": (2.61, 0.004)},
    "sp": {"ewtcp": (0.951, 0.005), "semicoupled": (1.07, 0.007), "lia": (1.13, 0.008),
           "balia": (1.22, 0.006), "coupled": (1.29, 0.005), "olia": (1.12, 0.004)},
}

#: Table IV — throughput (Mb/s) of one MP-TCP flow over WiFi (8 Mb/s, 10 ms) + 3G (2 Mb/s, 100 ms).
PENG_TABLE4 = {"ewtcp": (9.26, 0.008), "semicoupled": (9.27, 0.006), "lia": (9.26, 0.006),
               "balia": (9.27, 0.01), "coupled": (9.28, 0.01), "olia": (9.19, 0.09)}

#: Table V — convergence time (s) of the MP flow's second route after the SP flows leave
#: (longest observed), and total SP throughput (Mb/s) during 40–80 s. c = 20 Mb/s, T = 10 ms.
PENG_TABLE5 = {
    "convergence_s": {"ewtcp": 3.25, "semicoupled": 7.46, "lia": 17.75, "balia": 14.73,
                      "coupled": 94.36, "olia": 58.5},
    "sp_mbps": {"ewtcp": 13.89, "semicoupled": 15.35, "lia": 15.8, "balia": 16.28,
                "coupled": 16.64, "olia": 16.97},
}

#: Labels of the reproduction's tables and measured quantities.
T3, T4, T5, F3 = "Table III", "Table IV", "Table V", "Fig. 3"
Q_T3_MP, Q_T3_SP = "MP-TCP per-flow throughput (Mb/s)", "SP-TCP per-flow throughput (Mb/s)"
Q_T4 = "MP-TCP throughput over WiFi + 3G (Mb/s)"
Q_T5_CONV, Q_T5_SP = "convergence time of route 2 (s)", "total SP-TCP throughput 40–80 s (Mb/s)"
Q_F3 = "window oscillation D_s (eq. 13; Reno = 0.5)"


#: Peng et al.'s hosts ran the out-of-tree mptcp_olia.c, so every engine runs the paper's OLIA
#: column with that window update (``per_ack = 1``, docs/algorithms.md); the default ``olia``
#: updates per acknowledged packet.
PAPER_PARAMS = {"olia": {"per_ack": 1}}


def paper_algorithm(name: str) -> str | dict:
    """The algorithm of the paper's column ``name``: a table for the simulator's scenarios."""
    return {"name": name, **PAPER_PARAMS[name]} if name in PAPER_PARAMS else name
