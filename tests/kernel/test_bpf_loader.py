"""The loader's names and its one-line environment errors (no root or kernel needed)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mpcc import algorithms as algos
from mpcc.errors import EnvironmentProblem, MpccError
from mpcc.kernel import bpf
from mpcc.kernel.cli import command


def test_names():
    # discovered from the files: nothing lists the algorithms by hand
    assert bpf.algorithms() == sorted(p.name[:-len(".bpf.c")] for p in bpf.BPF_DIR.glob("*.bpf.c"))
    assert {"balia", "lia", "olia", "ewtcp", "semicoupled", "coupled", "generalized"} <= set(bpf.algorithms())
    assert bpf.kernel_name("balia") == "mpcc_balia"
    assert bpf.kernel_name("max") == "mpcc_lia"                     # alias of LIA
    assert bpf.kernel_name(algos.get("olia")) == "mpcc_olia"        # Algorithm objects
    assert bpf.kernel_name({"name": "coupled"}) == "mpcc_coupled"
    assert bpf.kernel_name("mpcc_semicoup") == "mpcc_semicoup"
    for k in map(bpf.kernel_name, bpf.algorithms()):
        assert k.startswith("mpcc_") and len(k) <= 15                # TCP_CA_NAME_MAX - 1
    assert bpf.kernel_name("coupled-increase") == bpf.kernel_name({"name": "mtcp", "alpha": 1, "beta": 0})
    with pytest.raises(MpccError, match="no BPF congestion control named 'vegas'"):
        bpf.kernel_name("vegas")


def test_not_root_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem, match="needs root"):
        bpf.load("balia")
    r = CliRunner().invoke(command, ["load", "balia"])
    assert r.exit_code != 0 and "needs root" in str(r.exception)


def test_missing_kernel_features_are_clear_errors(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 0)
    monkeypatch.setattr(bpf, "_btf_has", lambda token: token != b"bpf_struct_ops_tcp_congestion_ops")
    if bpf.Path("/sys/kernel/btf/vmlinux").exists():
        with pytest.raises(EnvironmentProblem, match="no BPF struct_ops for TCP congestion control"):
            bpf.check_environment()
    monkeypatch.setattr(bpf, "_btf_has", lambda token: token != b"mptcp_subflow_context")
    if bpf.Path("/sys/kernel/btf/vmlinux").exists():
        with pytest.raises(EnvironmentProblem, match="no MPTCP"):
            bpf.check_environment()


def test_missing_clang_is_needed_only_for_a_set_the_package_does_not_ship(monkeypatch, tmp_path):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 0)
    monkeypatch.setattr(bpf, "_btf_has", lambda token: True)
    monkeypatch.setattr(bpf, "_tool", lambda name: None if name == "clang" else "/bin/true")
    if not bpf.Path("/sys/kernel/btf/vmlinux").exists() or not bpf.Path("/proc/sys/net/mptcp/enabled").exists():
        pytest.skip("kernel without BTF/MPTCP: the earlier checks fire first")
    bpf.check_environment()             # no clang: still a usable environment (prebuilt objects)
    with pytest.raises(EnvironmentProblem, match=r"clang not found and ewtcp\(a=0.5\) has no prebuilt object.*"
                                                 r"apt-get install clang") as e:
        bpf.compile_object(bpf.spec("ewtcp(a=0.5)"), tmp_path / "x.bpf.o")
    assert "\n" not in str(e.value)


def test_cli_list_needs_no_root(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 1000)
    r = CliRunner().invoke(command, ["list"])
    assert r.exit_code == 0
    assert "semicoupled  mpcc_semicoup" in r.output


# --- the generalized (β, η, n) family: one object and kernel name per parameter set -----------
def test_generalized_names_are_deterministic_and_distinct():
    default = bpf.spec("generalized")
    assert dict(default.params) == {"beta": 0.2, "eta": 0.5, "n": "inf"}       # Peng et al.'s Balia-like point
    assert default.kernel_name == "mpcc_gen"                                    # the file's MPCC_KERNEL_NAME
    same = [bpf.spec(x) for x in ("generalized(beta=0.2, eta=0.5, n=inf)", {"name": "generalized", "eta": 0.5},
                                  algos.get({"name": "generalized", "beta": 0.2, "eta": 0.5, "n": "inf"}),
                                  algos.get("generalized"), algos.get("generalized").describe())]
    assert {s.kernel_name for s in same} == {default.kernel_name}
    names = {bpf.kernel_name({"name": "generalized", "beta": b, "eta": e, "n": n})
             for b in (0.0, 0.2, 0.5, 1.0) for e in (0.0, 0.5, 1.0) for n in (1, 2, "inf")}
    assert len(names) == 36                                                     # no two parameter sets share a name
    for k in names - {"mpcc_gen"}:
        assert k.startswith("mpcc_g") and len(k) == 15                          # TCP_CA_NAME_MAX - 1
    # the parameters reach the compiler as fixed-point constants, in the file's order
    sp = bpf.spec({"name": "generalized", "beta": 0.5, "eta": 1.0, "n": 2})
    assert set(sp.defines) == {f"-DMPCC_PARAM_VALUES={2**31}ULL,{2**32}ULL,2ULL,0",
                               f"-DMPCC_KERNEL_SYM={sp.kernel_name}"}
    assert sp.stem == "generalized-" + sp.kernel_name[len("mpcc_g"):]
    # the same names as before the one-file change (hash of the same encoded values)
    assert sp.kernel_name == "mpcc_g9bc9cdd5d"


@pytest.mark.parametrize("bad, message", [
    ({"name": "generalized", "n": 3}, "n=3 has no BPF implementation"),
    ({"name": "generalized", "beta": 1.5}, "beta=1.5 is out of range"),
    ({"name": "generalized", "eta": -1}, "eta=-1 is out of range"),
    ({"name": "generalized", "gamma": 1}, "unknown parameter"),
    ("generalized(beta=x)", "must be numbers"),
])
def test_generalized_parameters_outside_the_bpf_program_are_one_line_errors(bad, message):
    with pytest.raises(MpccError, match=message):
        bpf.spec(bad)


def test_cli_generalized_options(monkeypatch):
    monkeypatch.setattr(bpf.os, "geteuid", lambda: 1000)
    r = CliRunner().invoke(command, ["load", "balia", "--beta", "0.3"])
    assert r.exit_code != 0 and "balia: unknown parameter(s) beta" in str(r.exception)
    r = CliRunner().invoke(command, ["load", "generalized", "--n", "3"])
    assert r.exit_code != 0 and "n=3 has no BPF implementation" in str(r.exception)
    r = CliRunner().invoke(command, ["list"])
    assert r.exit_code == 0
    assert f"generalized  {bpf.kernel_name('generalized')}" in r.output and "beta=0.2, eta=0.5, n=inf" in r.output


# --- parameters of every algorithm, per load; refused when the program does not take them -------
def test_ewtcp_a_is_a_parameter_set_of_its_own():
    """{name = "ewtcp", a = 0.25} is its own object and kernel name, with a·2^32 compiled in;
    a = 1 (the default) is mpcc_ewtcp."""
    assert bpf.kernel_name({"name": "ewtcp", "a": 1.0}) == "mpcc_ewtcp"
    quarter = bpf.spec({"name": "ewtcp", "a": 0.25})
    assert quarter.kernel_name != "mpcc_ewtcp" and quarter.kernel_name.startswith("mpcc_e")
    assert len(quarter.kernel_name) == 15
    assert f"-DMPCC_PARAM_VALUES={2**30}ULL,0" in quarter.defines
    assert f"-DMPCC_KERNEL_SYM={quarter.kernel_name}" in quarter.defines
    same = [bpf.spec(x) for x in ("ewtcp(a=0.25)", algos.get({"name": "ewtcp", "a": 0.25}),
                                  algos.get({"name": "ewtcp", "a": 0.25}).describe())]
    assert {s.kernel_name for s in same} == {quarter.kernel_name}
    assert bpf.kernel_name({"name": "ewtcp", "a": 0.5}) not in (quarter.kernel_name, "mpcc_ewtcp")


@pytest.mark.parametrize("bad, message", [
    ({"name": "ewtcp", "b": 1}, "ewtcp: unknown parameter.*b.*takes a"),
    ({"name": "ewtcp", "a": 0}, "ewtcp: a=0 is out of range"),
    ("ewtcp(a=1e6)", r"ewtcp: a=1e\+06 is out of range"),
    ({"name": "balia", "beta": 0.2}, "balia: unknown parameter.*beta.*takes no parameters"),
    ({"name": "olia", "a": 2}, "olia: unknown parameter.*a"),
])
def test_parameters_a_bpf_program_cannot_honour_are_refused(bad, message):
    with pytest.raises(MpccError, match=message):
        bpf.spec(bad)


def _scenario(algorithm: str):
    from mpcc import scenario
    return scenario.loads(f"""
name = "p"
duration_s = 5.0
[[links]]
name = "a"
capacity_mbps = 10.0
delay_ms = 10.0
buffer_pkts = 50
[[links]]
name = "b"
capacity_mbps = 10.0
delay_ms = 10.0
buffer_pkts = 50
[[groups]]
name = "mp"
count = 1
algorithm = {algorithm}
paths = [["a"], ["b"]]
""", "p.toml")


def test_testbed_passes_ewtcp_a_to_the_kernel():
    """The testbed's congestion control for {name = "ewtcp", a = 0.25} is the a = 0.25 program,
    not mpcc_ewtcp (which runs a = 1): the parameter is no longer dropped."""
    from mpcc.testbed import engine
    s = _scenario('{name = "ewtcp", a = 0.25}')
    (cc,) = engine.group_ccs(s, engine.settings_from(s))
    kname, needs_bpf = engine.kernel_cc(cc)
    assert needs_bpf and kname == bpf.kernel_name({"name": "ewtcp", "a": 0.25}) != "mpcc_ewtcp"
    s = _scenario('"ewtcp"')
    assert engine.kernel_cc(engine.group_ccs(s, engine.settings_from(s))[0]) == ("mpcc_ewtcp", True)


@pytest.mark.parametrize("algorithm, expect", [
    ('{name = "mtcp", alpha = 0.5, beta = 0.5}', {"name": "mtcp", "alpha": 0.5, "beta": 0.5}),
    ('"coupled-increase"', {"name": "mtcp", "alpha": 1.0, "beta": 0.0}),
    ('"fully-coupled"', {"name": "mtcp", "alpha": 1.0, "beta": 1.0}),
    ('"mstcp"', {"name": "mstcp"}),
    ('{name = "fast", alpha = 20}', {"name": "fast", "alpha": 20.0}),
])
def test_testbed_runs_jiangs_and_tangs_algorithms_with_their_parameters(algorithm, expect):
    """MSTCP, MTCP (and its presets) and FAST have BPF programs: the testbed picks the program
    compiled with the scenario's parameters (its own kernel name unless all are defaults)."""
    from mpcc.testbed import engine
    s = _scenario(algorithm)
    (cc,) = engine.group_ccs(s, engine.settings_from(s))
    kname, needs_bpf = engine.kernel_cc(cc)
    assert needs_bpf and kname == bpf.kernel_name(expect)
    assert (kname == bpf.sources()[expect["name"]].kernel_name) == (len(expect) == 1)


@pytest.mark.parametrize("algorithm, message", [
    # the reference takes α up to 100000 packets, the program's Q32 field up to 65536
    ('{name = "fast", alpha = 80000}', r"fast: alpha=80000 is out of range for the BPF program"),
    ('{name = "generalized", n = 3}', "generalized: n=3 has no BPF implementation"),
])
def test_testbed_refuses_what_the_kernel_cannot_run(algorithm, message):
    """Refused before anything is set up, with one line naming the algorithm or parameter
    (MpccError: the CLI prints it and exits 2)."""
    from mpcc.testbed import engine
    s = _scenario(algorithm)
    with pytest.raises(MpccError, match=message) as e:
        engine.group_ccs(s, engine.settings_from(s))
    assert "\n" not in str(e.value) and e.value.exit_code == 2
    assert isinstance(e.value, bpf.BpfUnsupported)        # `compare` can tell "the kernel cannot run this"


# --- a refusal is one line, never the verifier log (older kernels: make kernels) ---------------
_OBJ = bpf.Path("/x/balia.bpf.o")


def test_refusal_names_a_missing_kfunc():
    log = ("libbpf: extern (func ksym) 'tcp_cong_avoid_ai': not found in kernel or module BTFs\n"
           "libbpf: failed to load object '/x/balia.bpf.o'\nError: failed to load object file\n")
    msg = bpf.refusal_reason(log, "mpcc_balia", _OBJ)
    assert msg == "mpcc_balia: this kernel has no kfunc tcp_cong_avoid_ai() the program calls (needs a newer kernel)"


def test_refusal_names_a_missing_struct_field():
    log = ("libbpf: prog 'mpcc_cong_avoid': relo #3: kind <byte_off> (0), spec is [12] struct "
           "mptcp_subflow_context.fully_established (0:22 @ offset 4)\n"
           "libbpf: prog 'mpcc_cong_avoid': relo #3: non-matching candidate #0 [9 ] struct mptcp_subflow_context\n"
           "libbpf: prog 'mpcc_cong_avoid': relo #3: no matching targets found\n"
           "libbpf: prog 'mpcc_cong_avoid': BPF program load failed: Invalid argument\n")
    msg = bpf.refusal_reason(log, "mpcc_balia", _OBJ)
    assert "\n" not in msg
    assert msg.startswith("mpcc_balia: this kernel's BTF has no mptcp_subflow_context.fully_established")
    assert "bpftool -d struct_ops register /x/balia.bpf.o" in msg


def test_refusal_by_the_verifier_is_its_verdict_not_the_log():
    insns = "".join(f"{i}: (bf) r1 = r6 ; R1_w=ctx() R6=ctx()\n" for i in range(500))
    log = ("libbpf: prog 'mpcc_cong_avoid': BPF program load failed: Permission denied\n"
           "libbpf: prog 'mpcc_cong_avoid': -- BEGIN PROG LOAD LOG --\n" + insns +
           "R2 min value is outside of the allowed memory range\n"
           "processed 812 insns (limit 1000000) max_states_per_insn 2 total_states 50\n"
           "-- END PROG LOAD LOG --\nlibbpf: failed to load object\nError: failed to load object file\n")
    msg = bpf.refusal_reason(log, "mpcc_olia", _OBJ)
    assert msg == ("mpcc_olia: the kernel's verifier refused it: R2 min value is outside of the allowed memory "
                   "range (full log: bpftool -d struct_ops register /x/balia.bpf.o)")


@pytest.mark.parametrize("flag, expect", [
    ("max", "lia"),                                                 # README: lia (alias max)
    ("coupled-decrease", {"name": "mtcp", "alpha": 0.0, "beta": 1.0}),  # MTCP presets
    ("fully-coupled", {"name": "mtcp", "alpha": 1.0, "beta": 1.0}),
])
def test_testbed_algorithm_flag_takes_aliases_and_presets(flag, expect):
    """`mpcc testbed --algorithm max` (or an MTCP preset) runs the algorithm it names, as in a
    scenario file and in `mpcc sim --algorithm`; it was refused as having no BPF program."""
    from mpcc.testbed import engine
    s = _scenario('"balia"')
    (cc,) = engine.group_ccs(s, engine.settings_from(s, algorithm=flag))
    assert engine.kernel_cc(cc) == (bpf.kernel_name(expect), True)


def test_testbed_algorithm_flag_with_an_unknown_name_lists_the_known_ones():
    from mpcc.testbed import engine
    s = _scenario('"balia"')
    with pytest.raises(MpccError, match=r"--algorithm: unknown algorithm 'nosuch' \(fix: use one of: .*cubic.*lia, "
                                        r"max.*reno") as e:
        engine.group_ccs(s, engine.settings_from(s, algorithm="nosuch"))
    assert "no BPF implementation" not in str(e.value) and e.value.exit_code == 2


def test_every_testbed_environment_error_names_its_fix():
    """The testbed's failure paths (no root, missing tool or kernel feature, linkem or a traffic
    process failing) are one line `... (fix: ...)` (read from the source: most need a machine
    without the feature to raise)."""
    import ast
    from pathlib import Path
    import mpcc.testbed as tb
    errors = {"EnvironmentProblem", "RunFailed", "BpfUnsupported"}
    missing = []
    for f in sorted(Path(tb.__file__).parent.glob("*.py")):
        text = f.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                fn = node.exc.func
                name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
                if name in errors and node.exc.args and isinstance(node.exc.args[0], (ast.Constant, ast.JoinedStr)):
                    line = text.splitlines()[node.end_lineno - 1]
                    if "(fix:" not in ast.get_source_segment(text, node.exc) and "(fix: …) in both" not in line:
                        missing.append(f"{f.name}:{node.lineno}")
    assert not missing, missing


def test_refusal_for_the_stack_or_the_complexity_limit_names_the_limit():
    """What 6.1's verifier said of programs 6.12+ accept (bench/kernel/kernels.json): one line that
    names the kernel's limit, not the verifier's last line alone."""
    log = ("libbpf: prog 'olia_cong_avoid': -- BEGIN PROG LOAD LOG --\n"
           "combined stack size of 5 calls is 544. Too large\nverification time 1 usec\n"
           "-- END PROG LOAD LOG --\nlibbpf: failed to load object\n")
    msg = bpf.refusal_reason(log, "mpcc_olia", _OBJ)
    assert msg == ("mpcc_olia: this kernel's verifier allows 512 bytes of stack per call chain and counts 544 for "
                   "a chain of 5 calls (Linux 6.1 rounds each frame up to 32 bytes; python/mpcc/lab/bpf_stack.py "
                   "/x/balia.bpf.o shows the chain)")
    log = ("libbpf: prog 'fast_in_ack_event': -- BEGIN PROG LOAD LOG --\n" + "1: (bf) r1 = r6\n" * 50 +
           "BPF program is too large. Processed 1000001 insn\n"
           "processed 1000001 insns (limit 1000000) max_states_per_insn 27 total_states 40000\n"
           "-- END PROG LOAD LOG --\nlibbpf: prog 'fast_in_ack_event': failed to load: -7\n")
    msg = bpf.refusal_reason(log, "mpcc_fast", _OBJ)
    assert "\n" not in msg and "r1 = r6" not in msg
    assert msg.startswith("mpcc_fast: the verifier's instruction limit: it walked 1000001 instructions without "
                          "finishing, up to 27 states per instruction (likely cause: paths that multiply")
    assert "older" not in msg and msg.endswith("(full log: bpftool -d struct_ops register /x/balia.bpf.o)")


@pytest.mark.parametrize("line, cause", [
    ("back-edge from insn 40 to 12", "the verifier cannot bound a loop"),
    ("infinite loop detected at insn 31", "the verifier cannot bound a loop"),
    ("The sequence of 8193 jumps is too complex.", "the verifier's limit of pending branches was reached after 8193 jumps"),
    ("invalid write to stack R10 off=-520 size=8", "one function's frame needs 520 bytes"),
])
def test_refusal_names_the_likely_cause_from_the_verifiers_text(line, cause):
    log = ("libbpf: prog 'epsilon_cong_avoid': -- BEGIN PROG LOAD LOG --\n" + "1: (bf) r1 = r6\n" * 5 + line +
           "\nprocessed 4000 insns (limit 1000000) max_states_per_insn 3 total_states 90\n"
           "-- END PROG LOAD LOG --\nlibbpf: failed to load object\n")
    msg = bpf.refusal_reason(log, "mpcc_epsilon", _OBJ)
    assert msg.startswith(f"mpcc_epsilon: {cause}") and "likely cause" in msg and "\n" not in msg, msg
