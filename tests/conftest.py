"""The kernel-test contract of the whole suite.

A test that needs root and the kernel testbed (network namespaces, qdiscs, BPF struct_ops, real
traffic) carries ``@pytest.mark.kernel``. `make test` runs the others in parallel (pytest-xdist,
``-m "not kernel"``) and the kernel ones serially under /tmp/mpcc-bench.lock. So that a test that
lacks the marker cannot act on the kernel next to another test, every unmarked test runs with:

- mpcc.testbed.netns (namespace creation, spawning in a namespace) and mpcc.kernel.bpf (struct_ops
  register/unregister) replaced by functions that raise ``KernelActionInUnmarkedTest``;
- a PATH whose first folder holds stand-ins for ``ip``, ``tc``, ``bpftool``, ``nsenter`` and
  ``unshare`` that exit 2 with one line naming the test's missing marker when asked to change
  kernel state (namespaces, links, addresses, routes, qdiscs, struct_ops, program loads), and
  otherwise exec the real tool — so the same holds in the subprocesses a test starts
  (`mpcc testbed`, bench scripts).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

KERNEL = "kernel"
GUARD_ENV = "MPCC_UNMARKED_TEST"          # the stand-ins name the test from it
_FOLDER = pytest.StashKey[Path]()

# the kernel-changing invocations the stand-ins refuse: tool -> shell `case` patterns over "$*"
_REFUSED = {
    "ip": ["*netns\\ add*", "*netns\\ a\\ *", "*netns\\ exec*", "*netns\\ e\\ *", "*netns\\ del*",
           "*netns\\ attach*", "*netns\\ set*", "*link\\ add*", "*link\\ del*", "*link\\ set*",
           "*addr\\ add*", "*address\\ add*", "*addr\\ del*", "*route\\ add*", "*route\\ replace*",
           "*route\\ del*", "*rule\\ add*", "*mptcp\\ endpoint\\ add*", "*mptcp\\ limits\\ set*"],
    "tc": ["*qdisc\\ add*", "*qdisc\\ replace*", "*qdisc\\ change*", "*qdisc\\ del*", "*class\\ add*",
           "*filter\\ add*"],
    "bpftool": ["*struct_ops\\ register*", "*struct_ops\\ unregister*", "*prog\\ load*",
                "*prog\\ loadall*", "*map\\ create*"],
    "nsenter": ["*"],
    "unshare": ["*"],
}


class KernelActionInUnmarkedTest(RuntimeError):
    pass


def _message(test: str, what: str) -> str:
    return (f"{test} {what} but is not marked kernel; `make test` runs unmarked tests in parallel, "
            "outside the bench lock (fix: add @pytest.mark.kernel to the test or its module)")


def _write_standins(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for tool, patterns in _REFUSED.items():
        real = shutil.which(tool)
        run_real = f'exec {real} "$@"' if real else f'echo "{tool}: not found" >&2; exit 127'
        text = ("#!/bin/sh\n"
                "# tests/conftest.py: refuses a kernel change in a test not marked kernel\n"
                f'case " $* " in\n  {"|".join(patterns)})\n'
                f'    echo "$MPCC_UNMARKED_TEST runs \\`{tool} $*\\` but is not marked kernel '
                "(fix: add @pytest.mark.kernel to the test or its module)\" >&2\n"
                "    exit 2;;\nesac\n"
                f"{run_real}\n")
        f = folder / tool
        f.write_text(text)
        f.chmod(f.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _refuse(test: str, what: str):
    def refused(*_a, **_k):
        raise KernelActionInUnmarkedTest(_message(test, what))
    return refused


def pytest_configure(config):
    folder = Path(tempfile.mkdtemp(prefix="mpcc-kernel-guard-"))
    _write_standins(folder)
    config.stash[_FOLDER] = folder


def pytest_unconfigure(config):
    folder = config.stash.get(_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """A ``long`` test is a kernel measurement: without ``kernel`` it would run in the parallel
    host phase."""
    bad = [i.nodeid for i in items if i.get_closest_marker("long") and not i.get_closest_marker(KERNEL)]
    if bad:
        raise pytest.UsageError(f"{bad[0]} is marked long but not kernel (fix: add @pytest.mark.kernel)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _guarded(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _guarded(item):
        yield


@contextlib.contextmanager
def _guarded(item):
    """Setup (fixtures of every scope included) and call of an unmarked test: no kernel action,
    in this process or in the processes it starts. (Not its teardown: a module's kernel fixture
    may be torn down after the module's last test, marked or not.)"""
    if item.get_closest_marker(KERNEL) is not None:
        yield
        return
    test = item.nodeid
    from mpcc.kernel import bpf
    from mpcc.testbed import netns
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(netns.Run, "add_netns", _refuse(test, "creates a network namespace"))
        mp.setattr(netns, "spawn", _refuse(test, "starts a process in a network namespace"))
        mp.setattr(bpf, "_register", _refuse(test, "registers a BPF struct_ops"))
        mp.setattr(bpf, "_unregister", _refuse(test, "unregisters a BPF struct_ops"))
        mp.setenv(GUARD_ENV, test)
        mp.setenv("PATH", f"{item.config.stash[_FOLDER]}{os.pathsep}{os.environ.get('PATH', '')}")
        yield
    finally:
        mp.undo()
