"""mpcc.filelock.exclusive takes the lock `flock FILE CMD` takes, and gives it back on any exit."""

import shutil
import subprocess

import pytest

from mpcc.filelock import exclusive

needs_flock = pytest.mark.skipif(shutil.which("flock") is None, reason="util-linux flock(1) not installed")


def _free(path) -> bool:
    """Whether flock(1) could take the lock right now (-n: fail instead of waiting)."""
    return subprocess.run(["flock", "-n", str(path), "true"]).returncode == 0


@needs_flock
def test_held_in_the_block_released_after_it_also_on_an_exception(tmp_path):
    lock = tmp_path / "sub" / "bench.lock"           # the folder is created too
    with exclusive(lock):
        assert not _free(lock)
    assert _free(lock)
    with pytest.raises(RuntimeError):
        with exclusive(lock):
            raise RuntimeError("a failed run")
    assert _free(lock)
