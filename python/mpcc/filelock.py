"""An exclusive flock(2) on a file for the length of a block: the lock ``flock FILE CMD`` takes,
so that mpcc's own processes and a user's shell scripts serialise on the same file."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: Path | str):
    """Hold an exclusive flock on ``path`` (created, with its folder, if missing) until the block
    ends; released on any exit, exceptions included."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
