"""Progress bars and worker pools, one definition for every engine and reproduction.

``bar(label, total)`` is a rich progress bar (a no-op when ``enabled`` is false) with
``advance(n)`` and ``update(completed)``; ``unit`` switches the counter from "done/total" to a
quantity ("simulated s"). ``run_jobs(fn, jobs, workers=…)`` maps ``fn`` over ``jobs`` on a
process or thread pool (or in this process for one worker) and yields results in completion order
(``ordered=True``: in job order), advancing a bar per result.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:   # concurrent.futures (logging, threading) and the pools load on first use
    from concurrent.futures import Executor


class Bar:
    """A rich progress bar; every method is a no-op when disabled."""

    def __init__(self, label: str, total: float, *, enabled: bool = True, unit: str | None = None,
                 stderr: bool = True, transient: bool = True, eta: bool = False):
        self.label, self.total, self.enabled = label, total, enabled
        self.unit, self.stderr, self.transient, self.eta = unit, stderr, transient, eta
        self._p = None

    def __enter__(self) -> "Bar":
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            count = (TextColumn("{task.completed:.0f}/{task.total:.0f} " + self.unit) if self.unit
                     else MofNCompleteColumn())
            clock = TimeRemainingColumn() if self.eta else TimeElapsedColumn()
            self._p = Progress(TextColumn("{task.description}"), BarColumn(), count, clock,
                               console=Console(stderr=True) if self.stderr else None, transient=self.transient)
            self._p.__enter__()
            self._task = self._p.add_task(self.label, total=self.total)
        return self

    def advance(self, n: float = 1) -> None:
        if self._p is not None:
            self._p.advance(self._task, n)

    def update(self, completed: float) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=completed)

    def __exit__(self, *exc) -> bool:
        if self._p is not None:
            self._p.__exit__(*exc)
        return False


def bar(label: str, total: float, *, enabled: bool = True, unit: str | None = None, stderr: bool = True,
        transient: bool = True, eta: bool = False) -> Bar:
    """A progress bar context (see :class:`Bar`)."""
    return Bar(label, total, enabled=enabled, unit=unit, stderr=stderr, transient=transient, eta=eta)


def default_workers() -> int:
    return os.cpu_count() or 1


def pool(workers: int, kind: str = "process") -> Executor:
    """A ``ProcessPoolExecutor`` (``kind="process"``) or ``ThreadPoolExecutor`` (``"thread"``:
    for work that releases the GIL, like the Rust simulator)."""
    if kind not in ("process", "thread"):
        raise ValueError(f"pool kind must be 'process' or 'thread', got {kind!r}")
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    return (ProcessPoolExecutor if kind == "process" else ThreadPoolExecutor)(max_workers=max(1, int(workers)))


def run_jobs(fn: Callable[[Any], Any], jobs: Iterable[Any], *, workers: int = 1, kind: str = "process",
             ordered: bool = False, progress: Bar | None = None,
             weight: Callable[[Any], float] = lambda result: 1) -> Iterator[Any]:
    """Yield ``fn(job)`` for every job: in this process when ``workers`` is 1, else on a pool of
    ``workers`` (:func:`pool`). Completion order unless ``ordered``. ``progress`` advances by
    ``weight(result)`` per result."""
    jobs = list(jobs)
    workers = max(1, min(int(workers), len(jobs) or 1))

    def tick(r):
        if progress is not None:
            progress.advance(weight(r))
        return r

    if workers == 1:
        for j in jobs:
            yield tick(fn(j))
        return
    from concurrent.futures import as_completed

    ex = pool(workers, kind)
    try:
        if ordered:
            for r in ex.map(fn, jobs):
                yield tick(r)
        else:
            for f in as_completed([ex.submit(fn, j) for j in jobs]):
                yield tick(f.result())
    finally:  # Ctrl-C, a failed job or an abandoned generator: queued jobs are cancelled
        ex.shutdown(wait=True, cancel_futures=True)
