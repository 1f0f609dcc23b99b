"""Helpers shared by the reproductions."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

from .. import algorithms
from ..filelock import exclusive
from ..scenario import Scenario, load

SCENARIO_DIR = Path(__file__).resolve().parents[3] / "scenarios"


def scenario(paper: str, name: str) -> Scenario:
    return load(SCENARIO_DIR / paper / f"{name}.toml")


def with_algorithm(s: Scenario, algorithm, groups: tuple[str, ...] | None = None) -> Scenario:
    """The scenario with the multipath groups (or the named groups) running ``algorithm``."""
    algo = algorithms.get(algorithm)
    new = []
    for g in s.groups:
        target = (g.name in groups) if groups is not None else g.multipath
        new.append(replace(g, algorithm=algo, algorithm_spec=algorithm) if target else g)
    return replace(s, groups=tuple(new), name=f"{s.name}[{algo.describe()}]")


def run_columns(rep, steps, engines, out: Path | None = None, labels=None, after=None) -> list[str]:
    """Fill the columns of ``rep`` in the order of ``engines`` (``steps[engine]()`` fills one).
    An engine that fails with an MpccError keeps its reason as its column's ``error`` and every
    other column runs; each column records its ``wall_s``; after each one ``after()`` (if given)
    runs and, with ``out``, results.json/.md are saved. Returns the errors, one line each: an
    engine's failure and each of its failed cells, named ``labels.get(engine, engine)``."""
    import time

    from ..errors import MpccError

    labels = labels or {}
    errors: list[str] = []
    for engine in engines:
        name = labels.get(engine, engine)
        start = time.monotonic()
        try:
            steps[engine]()
        except MpccError as e:
            rep.columns[engine] = {"error": str(e)}
            errors.append(f"{name}: {e}")
        rep.columns.setdefault(engine, {})["wall_s"] = round(time.monotonic() - start, 1)
        errors += [f"{name}: {cell}" for cell in rep.columns[engine].get("failed_cells", ())]
        if after:
            after()
        if out:
            rep.save(Path(out))
    return errors


def kernel_cells(keys, measure) -> dict:
    """``{key: measure(key)}`` for kernel (testbed) cells; a cell whose run failed twice
    (:class:`mpcc.testbed.engine.RunFailed`: a flow that never connected, a sender error — already
    retried once by the engine) becomes ``{"failed": reason}`` and every other cell is kept."""
    from ..testbed import engine

    res = {}
    for k in keys:
        try:
            res[k] = measure(k)
        except engine.RunFailed as e:
            res[k] = {"failed": str(e)}
    return res


@contextlib.contextmanager
def kernel_lock_held(lock: Path | None):
    """An exclusive flock(2) on the file ``lock`` (created if missing) until the block ends — the
    lock ``flock FILE CMD`` takes, so that on a shared testbed other users' runs go between the
    kernel runs of a reproduction instead of disturbing them; nothing without a file."""
    if lock is None:
        yield
        return
    with exclusive(lock):
        yield


def failed(cell) -> str | None:
    """The reason a cell of :func:`kernel_cells` failed, else None."""
    return cell.get("failed") if isinstance(cell, dict) else None


#: The note of a kernel cell whose run failed (after one retry).
FAILED_NOTE = "run failed (retried once)"
