"""The option tables of the engines — ``[sim]``, ``[fluid]``, ``[testbed]`` — and their checks
across fields, validated by :func:`mpcc.scenario.engine_options` when a scenario is loaded
(ranges in :data:`mpcc.ranges.R`, docs/scenario.md "Ranges"). One module without engine
imports, so ``mpcc check`` loads no numpy; each engine re-exports its table from
``mpcc/<engine>/options.py``."""

from __future__ import annotations

from .errors import ScenarioError
from .scenario import Option, Scenario, engine_options

# --- [sim] ---------------------------------------------------------------------------------------
SIM_OPTIONS = {
    "measure_from_s": Option(None, example="20.0"),
    "measure_to_s": Option(None, example="100.0"),
    "sample_interval_s": Option(None, example="0.1"),
    "start_jitter_s": Option(1.0, example="1.0"),
    "initial_cwnd": Option(10.0, example="10"),
    "rto_min_s": Option(0.2, example="0.2"),
    "delayed_ack": Option(False, "bool", example="false"),
    "delayed_ack_s": Option(0.04, example="0.04"),
    "per_ack_increase": Option(False, "bool", example="true"),
    "slow_start_at_ssthresh": Option(False, "bool", example="true"),
    "ecn": Option(True, "bool", example="true"),
    # 1 ms: a jiffy at HZ=1000 and Dummynet's tick (Peng et al.'s testbed); see docs/sim.md
    "host_jitter_s": Option(0.001, example="0.001"),
    # the MPTCP connection level: "ideal" (every subflow always has data) or "linux" (upstream
    # 6.x's send buffer, scheduler, DATA_ACK and shared receive window; docs/sim.md)
    "mptcp": Option("ideal", "choice", choices=("ideal", "linux"), example='"linux"'),
    # net.ipv4.tcp_wmem / tcp_rmem (bytes) of the linux connection level: the testbed's values
    # (python/mpcc/testbed/topology.py)
    "tcp_wmem_min": Option(4096, example="4096"),
    "tcp_wmem_default": Option(262144, example="262144"),
    "tcp_wmem_max": Option(33554432, example="33554432"),
    "tcp_rmem_min": Option(4096, example="4096"),
    "tcp_rmem_default": Option(262144, example="262144"),
    "tcp_rmem_max": Option(33554432, example="33554432"),
    # the linux connection level's tcp_sndbuf_expand factor: the kernel's 2 ("kernel", what the
    # testbed loads by default) or the programs' built with MPCC_BPF_CONN=sndbuf ("mpcc")
    "sndbuf_expand": Option("kernel", "choice", choices=("kernel", "mpcc"), example='"mpcc"'),
    # the linux connection level's tcp_sndbuf_expand per_mss (bytes): a kernel-build constant,
    # 4352 on Debian's generic and rt kernels, 2304 on its cloud ones; the testbed measures its kernel's
    # (mpcc.testbed.tcpmem.kernel_sndbuf_per_mss), which `mpcc compare` passes on
    "sndbuf_per_mss": Option(4352, example="2304"),
    # the receivers' ACKs: "auto" ("linux" with mptcp = "linux", else "simple"), "simple" (every
    # segment, or the delayed_ack rule) or "linux" (every receiver runs a Linux TCP socket's
    # delayed-ACK engine; docs/sim.md)
    "receiver": Option("auto", "choice", choices=("auto", "simple", "linux"), example='"simple"'),
    # tail loss probes (RFC 8985 §7, as Linux sends them): "auto" ("on" with mptcp = "linux",
    # else "off": the papers' TCP, where a tail loss waits for the RTO), "on" or "off"
    "tlp": Option("auto", "choice", choices=("auto", "on", "off"), example='"on"'),
    # the linux connection level's writer: its send timeout (SO_SNDTIMEO, s), after which a
    # writer waiting for send-buffer room writes again into whatever room there is; 0 (no
    # timeout): it waits for a third of the buffer (docs/sim.md)
    "writer_wait_s": Option(0.0, example="0.2"),
}


#: Shortest measurement window: a rate over a shorter window is dominated by one packet.
MIN_WINDOW_S = 1e-3


def sim_options(scenario: Scenario) -> dict:
    return engine_options(scenario, "sim")


def measurement_window(scenario: Scenario, measure: tuple[float, float] | None = None) -> tuple[float, float]:
    """[t0, t1]: the argument, else ``[sim] measure_from_s``/``measure_to_s``, else
    [duration/5, duration]."""
    opts = sim_options(scenario)
    if measure is None:
        t0 = opts["measure_from_s"] if opts["measure_from_s"] is not None else scenario.duration_s / 5.0
        t1 = opts["measure_to_s"] if opts["measure_to_s"] is not None else scenario.duration_s
    else:
        t0, t1 = float(measure[0]), float(measure[1])
    if not (0 <= t0 < t1 <= scenario.duration_s) or t1 - t0 < MIN_WINDOW_S:
        fld = "--measure" if measure is not None else "sim.measure_from_s/measure_to_s"
        raise ScenarioError(scenario.source, fld, f"measurement window [{t0:g}, {t1:g}] is not inside [0, {scenario.duration_s:g}] "
                            f"with t1 − t0 ≥ {MIN_WINDOW_S:g} s",
                            f"choose 0 ≤ t0 < t1 ≤ duration_s with t1 − t0 ≥ {MIN_WINDOW_S:g} s")
    return t0, t1


def sim_cross_check(scenario, opts) -> None:
    """Checks that involve other fields of the scenario (run by mpcc.scenario at load time)."""
    measurement_window(scenario)


# --- [fluid] -------------------------------------------------------------------------------------
RTT_MODES = ("propagation", "propagation+queue")

FLUID_OPTIONS = {
    "rtt": Option("propagation", "choice", choices=RTT_MODES, example='"propagation"'),
    "gamma": Option(None, example="1e-4"),     # price gain γ_l of (4), 1/packet (None: per-link default)
    "t_end": Option(None, example="100.0"),    # dynamics horizon (default: duration_s)
    "at_s": Option(None, example="50.0"),      # equilibrium of the groups active at this time
}


def check_at(scenario, at_s: float, fld: str) -> None:
    """``at_s`` must be a time at which some group is active."""
    if not any(g.start_s <= at_s < g.stop_s for g in scenario.groups):
        spans = ", ".join(f"{g.name} [{g.start_s:g}, {g.stop_s:g})" for g in scenario.groups[:4])
        raise ScenarioError(scenario.source, fld, f"no group is active at {at_s:g} s",
                            f"choose a time inside a group's [start_s, stop_s): {spans}")


def fluid_cross_check(scenario, opts) -> None:
    """Checks that involve other fields of the scenario (run by mpcc.scenario at load time)."""
    if opts["at_s"] is not None:
        check_at(scenario, opts["at_s"], "fluid.at_s")


# --- [testbed] -----------------------------------------------------------------------------------
#: ``[testbed] receiver``: the receiving sockets' ACKs (mpcc.testbed.topology.set_receiver)
RECEIVERS = ("linux", "quickack")
#: the ``[sim]`` options that model each ``[testbed] receiver`` in the linux mode (``mpcc compare``'s
#: sim-linux): the stock receiver is the simulator's "auto" ("linux" in that mode); a quickack
#: receiver ACKs every data segment at once, the simulator's "simple" without delayed_ack
RECEIVER_SIM = {"linux": {}, "quickack": {"receiver": "simple"}}

TESTBED_OPTIONS = {
    "runs": Option(1, example="1"),
    "duration_s": Option(None, example="60.0"),   # default: the scenario's duration_s
    "warmup_s": Option(None, example="10.0"),     # default: min(10 s, 20 % of the duration)
    "sample_ms": Option(100.0, example="100"),
    "algorithm": Option(None, "string", example="balia"),
    "seed": Option(1, example="1"),
    "spin_us": Option(30, example="30"),
    # the receivers' ACKs: "linux" (the stock delayed-ACK engine) or "quickack" (the route
    # metric quickack 1 on the server's routes: every data segment ACKed at once; docs/testbed.md)
    "receiver": Option("linux", "choice", choices=RECEIVERS, example='"quickack"'),
}


def testbed_cross_check(scenario, opts) -> None:
    """Checks that involve other fields of the scenario (run by mpcc.scenario at load time)."""
    dur = opts["duration_s"] or scenario.duration_s
    if opts["warmup_s"] is not None and opts["warmup_s"] >= dur:
        raise ScenarioError(scenario.source, "testbed.warmup_s",
                            f"warm-up {opts['warmup_s']:g} s is not shorter than the run ({dur:g} s)",
                            "lower warmup_s or raise duration_s")
