"""Heterogeneous congestion control (Tang, Wei, Low, Chiang, IEEE/ACM ToN 2010).

model       network (c, m, R, U), price mappings (power, RED eq. 2), input files
equilibria  all equilibria of (3), (6), (7); γ (15), bound (17), stability, Theorem 6
dynamics    dual dynamics ṗ = y(p) − c, Algorithm 1 (two timescales), Theorem-11 optimum
tang2010    Examples 3 and 4 of the paper, with plots
"""

from .model import Network, PriceMapping, Source, load, loads  # noqa: F401
