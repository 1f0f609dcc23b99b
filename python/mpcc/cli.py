"""The ``mpcc`` command line.

Each engine or analysis owns its subcommand in its own package (``mpcc/<pkg>/cli.py`` exposing
``command``); this module only wires them together, so adding one is adding a line to
``_COMMANDS``. Errors a user can fix (:class:`~mpcc.errors.MpccError`) print as one line on
stderr and exit with code 2.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import click

from .errors import MpccError

_COMMANDS = {
    "fluid": ("mpcc.fluid.cli", "command", "Fluid model of Peng et al.: equilibrium, dynamics, analyses."),
    "sim": ("mpcc.sim.cli", "command", "Packet-level discrete-event simulation (Rust core)."),
    "testbed": ("mpcc.testbed.cli", "command", "Run a scenario on the real kernel in network namespaces."),
    "kernel": ("mpcc.kernel.cli", "command", "Load/unload the BPF struct_ops congestion controls."),
    "lab": ("mpcc.lab.cli", "command", "Kernel lab: the BPF programs on other kernels, churn soaks, scale."),
    "hetero": ("mpcc.hetero.cli", "command", "Heterogeneous congestion control (Tang, Wei, Low, Chiang)."),
    "mtc": ("mpcc.mtc.cli", "command", "Multipath transmission control (Jiang, Cai, Towsley)."),
    "reproduce": ("mpcc.reproduce.cli", "command", "Reproduce a paper's tables and figures."),
    "vectors": ("mpcc.vectors", "command", "Write or check the shared algorithm test vectors."),
    "check": ("mpcc.cli_check", "command", "Validate scenario files."),
    "topo": ("mpcc.topo.cli", "command", "Generate topologies (fat tree) as scenario files."),
    "compare": ("mpcc.compare.cli", "command", "Run a scenario on several engines and diagnose differences."),
}


class _LazyGroup(click.Group):
    """Subcommands are imported only when run: ``mpcc --help`` lists them from ``_COMMANDS``
    without importing any engine (numpy, pyarrow, matplotlib stay unloaded)."""

    def list_commands(self, ctx):
        return list(_COMMANDS)

    def get_command(self, ctx, name):
        return self._load(name)

    def format_commands(self, ctx, formatter):
        rows = [(name, help_) for name, (_, _, help_) in _COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    @staticmethod
    def _load(name):
        if name not in _COMMANDS:
            return None
        module, attr, _ = _COMMANDS[name]
        return getattr(importlib.import_module(module), attr)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mpcc")
def cli():
    """mpcc — multipath congestion control: model (fluid), simulate (sim), run (testbed).

    One scenario file drives all three engines; see scenarios/ and docs/scenario.md.
    """


def _one_line(text: str) -> str:
    """Messages built from user input stay on one line (control characters escaped)."""
    from .ranges import escape   # not needed by `mpcc --help`
    return escape(" ".join(str(text).split("\n")).strip())


def _usage_line(e: click.exceptions.UsageError) -> str:
    """A click usage error (bad flag type, missing argument, unknown option) in the project's
    form: ``mpcc: error: <command>: <problem> (fix: …)``."""
    cmd = e.ctx.command_path if e.ctx is not None else "mpcc"
    msg = _one_line(e.format_message())
    if "(fix:" not in msg:
        msg += f" (fix: see `{cmd} --help`)"
    return f"mpcc: error: {cmd}: {msg}"


def main(argv=None):
    """Entry point: run the command; any error a user can fix is one line on stderr, exit 2.
    Numerical warnings (numpy's RuntimeWarning on overflow etc.) of handled cases are not
    printed: results are checked for finiteness where they are produced."""
    try:
        with warnings.catch_warnings():   # numpy's RuntimeWarnings are warnings too
            warnings.simplefilter("ignore")   # RuntimeWarning, UserWarning of handled cases
            cli.main(args=argv, prog_name="mpcc", standalone_mode=False)
    except MpccError as e:
        click.echo(f"mpcc: error: {_one_line(str(e))}", err=True)
        sys.exit(e.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt) as e:
        # click turns Ctrl-C into Abort (the KeyboardInterrupt is its cause); a command that kept
        # completed work says what on the exception (``mpcc_kept``), so this stays one line
        kept = getattr(e, "mpcc_kept", None) or getattr(e.__cause__, "mpcc_kept", None)
        click.echo(f"mpcc: interrupted; {kept}" if kept else "mpcc: interrupted (no result was written)",
                   err=True)
        sys.exit(130)
    except click.exceptions.UsageError as e:
        click.echo(_usage_line(e), err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"mpcc: error: {_one_line(e.format_message())}", err=True)
        sys.exit(e.exit_code if e.exit_code else 1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except BrokenPipeError:   # `mpcc … | head`
        sys.exit(0)
    except MemoryError:
        click.echo("mpcc: error: out of memory (fix: lower the run's size — duration, flows, runs — "
                   "or see the cost estimate in docs/scenario.md)", err=True)
        sys.exit(2)
    sys.exit(0)


if __name__ == "__main__":
    main()
