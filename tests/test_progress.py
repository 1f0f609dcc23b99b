"""mpcc.progress: the one progress bar / worker pool helper of the engines and reproductions."""

import pytest

from mpcc.progress import Bar, run_jobs


class _Counter(Bar):
    """A disabled bar that records what it was advanced by."""

    def __init__(self):
        super().__init__("test", 0, enabled=False)
        self.done = 0.0

    def advance(self, n=1):
        self.done += n


def _square(x):
    return x * x


@pytest.mark.parametrize("workers,kind", [(1, "process"), (3, "thread"), (2, "process")])
def test_run_jobs_results_and_progress(workers, kind):
    c = _Counter()
    ordered = list(run_jobs(_square, range(7), workers=workers, kind=kind, ordered=True, progress=c,
                            weight=lambda r: r))
    assert ordered == [0, 1, 4, 9, 16, 25, 36]
    assert c.done == 91  # advanced by each result's weight
    assert sorted(run_jobs(_square, range(7), workers=workers, kind=kind)) == ordered


def _fail(x):
    if x == 2:
        raise ValueError("job 2")
    return x


@pytest.mark.parametrize("workers", [1, 2])
def test_run_jobs_propagates_errors(workers):
    with pytest.raises(ValueError, match="job 2"):
        list(run_jobs(_fail, range(4), workers=workers, kind="thread"))


def test_unknown_pool_kind():
    with pytest.raises(ValueError, match="kind"):
        list(run_jobs(_square, range(3), workers=2, kind="fibre"))


def test_disabled_bar_is_silent(capsys):
    with Bar("quiet", 10, enabled=False) as b:
        b.advance(3)
        b.update(5)
    assert capsys.readouterr() == ("", "")
