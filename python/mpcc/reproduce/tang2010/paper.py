"""Published values of Tang, Wei, Low, Chiang (ToN 2010) and the paper's own inputs."""

# Example 3 (§VI-B, Fig. 7): the price-mapping exponents K^j per protocol, and the starting prices
# of Cases 1 and 2 with the equilibria the paper reports from them and the optimum's p_1.
EXAMPLE3_K = {"p1": (1.0, 1.0, 1.0), "p2": (5.0, 1.0, 5.0), "p3": (1.0, 3.0, 1.0)}
EXAMPLE3_CASES = {"case1": (0.3, 0.3, 0.3), "case2": (0.1, 0.3, 0.1)}
PAPER_EXAMPLE3 = {"case1": (0.165, 0.170, 0.165), "case2": (0.135, 0.230, 0.135), "p1_optimum": 0.222}

# Examples 1 and 2 at packet level
PAPER_TABLE1 = {"example1a-b400": (5.4, 2.1), "example1a-b80": (0.6, 3.4),
                "example1b-b400": (4.2, 3.1), "example1b-b80": (4.1, 3.2)}  # (Reno, FAST) packets/ms
# Example 2 (§II-B, §VII-B): the paper gives numbers only for 2b; 2a is described qualitatively.
PAPER_EXAMPLE2 = {
    "example2a-fast-first": {"text": "Reno starved (FAST fills link 2-3 first)"},
    "example2a-reno-first": {"text": "Reno keeps l12/l34 queues; FAST never fills link 2-3"},
    "example2b-fast-first": {"reno": 0.6, "fast": 1.5, "alpha": 96.0, "bottlenecks": "l12, l34",
                             "text": "switch from l23 to l12/l34 around 2000 s"},
    "example2b-reno-first": {"reno": 0.6, "fast": 1.5, "alpha": 96.0, "bottlenecks": "l12, l34",
                             "text": "alpha rises from 50 to ~96"},
}
