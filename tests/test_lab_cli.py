"""``mpcc lab``: the commands a user runs (no root needed here: only their --help and an unknown
command). Each command is its module's ``main``; a command whose module is gone, or an investigation
reader that is not a command, would fail these."""

from __future__ import annotations

import importlib

import pytest
from click.testing import CliRunner

from mpcc.lab.cli import COMMANDS, command

#: what a user runs (issue 31): the kernel matrix and its single-kernel check, the churn soak on this
#: kernel and in guests, scale, and the stack check
USER_COMMANDS = {"kernels", "check", "churn", "guest-churn", "scale", "bpf-stack"}


def test_the_commands_are_the_user_commands():
    assert set(COMMANDS) == USER_COMMANDS


@pytest.mark.parametrize("name", sorted(USER_COMMANDS))
def test_each_command_is_its_modules_main_and_prints_its_usage(name, capsys):
    module, help_ = COMMANDS[name]
    assert callable(importlib.import_module(module).main) and help_
    with pytest.raises(SystemExit) as e:
        importlib.import_module(module).main(["--help"])
    assert e.value.code == 0
    # the group runs the module with argv[0] = "mpcc lab NAME", so argparse's usage names the command
    r = CliRunner().invoke(command, [name, "--help"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"usage: mpcc lab {name} ")


def test_an_unknown_command_is_refused():
    r = CliRunner().invoke(command, ["stall-holders"])
    assert r.exit_code == 2 and "No such command" in r.output


@pytest.mark.parametrize("first, retried", [
    ({"pm_mib": {"cli": {"MPTcpExtAddAddrDrop": 1}}, "ss_text": "x"}, True),    # the kernel's PM race
    ({"ss_text": ""}, True),                                                     # ss printed nothing
    ({"pm_mib": {"srv": {"MPTcpExtAddAddrDrop": 1}}, "ss_text": "x"}, False),    # not the client's drop
    ({"pm_mib": {"cli": {"MPTcpExtAddAddr": 1}}, "ss_text": "x"}, False),        # received, not dropped
])
def test_kernels_check_repeats_a_missing_subflow_only_for_a_named_cause(monkeypatch, first, retried):
    """`mpcc lab kernels`: a transfer without its second subflow is repeated once only when ss saw
    nothing or the client's path manager dropped the ADD_ADDR; any other cause fails the row."""
    from mpcc.kernel import bpf
    from mpcc.lab import kernels_check as kc
    kname = bpf.kernel_name("ewtcp")
    results = [(first, "no subflow to 198.18.2.2 during the transfer (ss -ti)"), ({"received_bytes": 1}, None)]
    monkeypatch.setattr(bpf, "load", lambda algo: type("Reg", (), {"release": lambda self: None})())
    monkeypatch.setattr(kc, "_struct_ops_names", lambda: {kname})
    monkeypatch.setattr(kc, "_available", lambda: [kname])
    monkeypatch.setattr(kc, "_transfer", lambda *a: results.pop(0))
    row = kc.check("ewtcp", "api", 1.0, False, lab=None)
    assert row["status"] == ("pass" if retried else "fail")
    assert row.get("attempts") == (2 if retried else None)
    assert ("first_attempt" in row) == retried
