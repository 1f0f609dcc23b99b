"""Fixtures shared by the kernel tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def path_without_clang(tmp_path) -> str:
    """A PATH with every command of the usual directories except clang/llc/llvm (symlinks), for
    the tests that the package loads its prebuilt objects without a compiler."""
    bindir = tmp_path / "bin-without-clang"
    bindir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/usr/sbin"):
        for exe in Path(d).iterdir() if Path(d).is_dir() else []:
            if exe.name.startswith(("clang", "llc", "llvm")) or (bindir / exe.name).exists():
                continue
            (bindir / exe.name).symlink_to(exe)
    return str(bindir)


@pytest.fixture
def one_attempt_per_run(monkeypatch):
    """Testbed runs without the health check's re-runs (health.healthy_run with no extra
    attempt), for tests that judge a run's set-up or its error paths, or the emulator's capacity
    facts on kernel Reno (no BPF program), never rates or shares: a run with late emulator
    releases is as good a set-up as any, and a re-run would only repeat it. Each run's health is
    still computed and reported."""
    import functools
    from mpcc.testbed import health
    monkeypatch.setattr(health, "healthy_run", functools.partial(health.healthy_run, extra_attempts=0))
