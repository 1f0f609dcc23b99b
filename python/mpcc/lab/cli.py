"""``mpcc lab``: the kernel lab's commands. Each hands its arguments to the module's own argparse
``main`` (``mpcc lab churn --help`` shows the soak's options), so a command and
``python -m mpcc.lab.<module>`` are the same program."""

from __future__ import annotations

import importlib
import sys

import click

#: command → (module, one-line help). The module's ``main(argv) -> int`` is the command.
COMMANDS = {
    "kernels": ("mpcc.lab.kernels", "Every BPF program on Debian's 6.1/6.12 kernels (qemu) and the running one (`make kernels`)."),
    "check": ("mpcc.lab.kernels_check", "Every BPF program on the running kernel: load, a 2-path MPTCP transfer, unload (root)."),
    "churn": ("mpcc.lab.churn", "Subflow-churn soak: MPTCP connections while paths go down and up (root)."),
    "guest-churn": ("mpcc.lab.guest_churn", "The churn soak inside fresh qemu guests of other kernels."),
    "scale": ("mpcc.lab.scale", "Many concurrent MPTCP connections with 2-4 subflows: throughput and memory (root)."),
    "bpf-stack": ("mpcc.lab.bpf_stack", "The verifier's combined stack of each compiled program, per kernel's rule."),
}

_PASS = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def command():
    """The kernel lab: checks of the BPF congestion controls beyond one scenario (other kernels,
    churn soaks, scale). Results are recorded under bench/kernel/."""


def _add(name: str, module: str, help_: str) -> None:
    @command.command(name, help=help_, short_help=help_, context_settings=_PASS, add_help_option=False)
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def run(args):
        mod = importlib.import_module(module)
        code = _with_argv(lambda: mod.main(list(args)), name, args)
        sys.exit(code or 0)


def _with_argv(fn, name, args) -> int:
    """Run a tool with sys.argv as `mpcc lab NAME ARGS` (argparse's prog)."""
    saved = sys.argv
    sys.argv = [f"mpcc lab {name}", *args]
    try:
        return fn()
    finally:
        sys.argv = saved


for _name, (_module, _help) in COMMANDS.items():
    _add(_name, _module, _help)
