"""Writing results under ``--out``: one helper for every command.

``with staged(out) as tmp:`` yields a fresh temporary directory next to ``out`` (same file
system, so the final move is a rename); the command writes its files into ``tmp``. When the
block ends normally the files move into ``out`` (created if missing; files of the same name are
replaced, others are left alone). When it raises — a write error, a bug, Ctrl-C — the temporary
directory is removed and ``out`` is untouched: no partial figure or half-written table ever
appears there. A staging name carries its process id (``.D.tmp-<pid>-…``): nothing can remove it
when the command is killed with SIGKILL, so the next command writing next to ``D`` removes
staging names whose process no longer exists. Commands that keep *completed* work after an interruption (``sim --runs``) write
it in a second ``staged`` block, marked partial (see :func:`mark_partial`).

A file-system failure (read-only, full disk, a file where a directory is expected) is one
:class:`~mpcc.errors.MpccError` line naming the flag and the directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import MpccError

PARTIAL_MARKER = "PARTIAL.json"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _prefix(out: Path) -> str:
    """The staging-name prefix of ``out`` for this process."""
    return f".{out.name}.tmp-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # another user's live process
        return True
    return True


def remove_stale(parent: Path, out: Path) -> list[Path]:
    """Remove the staging directories and files next to ``out`` left by a killed command (their
    process id is gone); return what was removed. A live process's staging name is never touched."""
    removed = []
    head = f".{out.name}.tmp-"
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for p in entries:
        if not p.name.startswith(head):
            continue
        pid = p.name[len(head):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        except OSError:
            continue
        removed.append(p)
    return removed


def _fail(flag: str, out: Path, what: str, e: OSError):
    reason = e.strerror or type(e).__name__
    raise MpccError(f"{flag} {out}: {what}: {reason} (fix: choose a writable directory with free space)") from None


@contextlib.contextmanager
def staged(out_dir: str | Path, flag: str = "--out", *, keep_partial: bool = False) -> Iterator[Path]:
    """Yield a temporary directory next to ``out_dir``; move its files into ``out_dir`` when the
    block succeeds. ``keep_partial``: when the block fails or is interrupted, the files written
    so far (complete ones: the command writes each result file whole) are published too, with
    PARTIAL.json saying why; otherwise nothing is published."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise MpccError(f"{flag} {out}: exists and is not a directory (fix: choose a directory path)")
    parent = out.parent if str(out.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale(parent, out)
        tmp = Path(tempfile.mkdtemp(prefix=_prefix(out), dir=parent))
        # mkdtemp makes it 0700; the published directory gets the mode mkdir would give it (a
        # results directory written by `sudo mpcc testbed` must stay readable by its user)
        os.chmod(tmp, 0o777 & ~_umask())
    except OSError as e:
        _fail(flag, out, "cannot create it", e)
    try:
        try:
            yield tmp
        except OSError as e:
            _fail(flag, out, "cannot write", e)
        except BaseException as e:
            if keep_partial and any(tmp.iterdir()):
                reason = "interrupted" if isinstance(e, KeyboardInterrupt) else f"failed: {type(e).__name__}"
                if not (tmp / PARTIAL_MARKER).exists():     # the command's own (with its counts) wins
                    (tmp / PARTIAL_MARKER).write_text(json.dumps({"partial": True, "reason": reason}) + "\n")
                with contextlib.suppress(OSError):
                    publish(tmp, out)
                    kept = getattr(e, "mpcc_kept", None)      # said on the interrupt line (mpcc.cli)
                    with contextlib.suppress(AttributeError):
                        e.mpcc_kept = (kept.replace(str(tmp), str(out)) if kept else
                                       f"kept what was completed in {out}/ (marked partial: {PARTIAL_MARKER})")
            raise
        try:
            publish(tmp, out)
        except OSError as e:
            _fail(flag, out, "cannot move the results into place", e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish(tmp: Path, out: Path) -> list[Path]:
    """Move the files of ``tmp`` into ``out`` (a rename when ``out`` does not exist yet)."""
    names = sorted(p.name for p in tmp.iterdir())
    if not out.exists():
        os.replace(tmp, out)
        return [out / n for n in names]
    for name in names:
        dst = out / name
        if dst.is_dir() and not (tmp / name).is_dir():
            raise IsADirectoryError(21, "a directory is in the way", str(dst))
        if dst.is_dir():
            shutil.rmtree(dst)
        os.replace(tmp / name, dst)
    # a complete result replaces the marker of an earlier partial one
    if PARTIAL_MARKER not in names and (out / PARTIAL_MARKER).exists():
        (out / PARTIAL_MARKER).unlink()
    return [out / n for n in names]


def mark_partial(tmp: Path, done: int, requested: int, reason: str) -> None:
    """Write ``PARTIAL.json`` into a staged directory: the results cover ``done`` of
    ``requested`` runs because of ``reason`` (e.g. "interrupted")."""
    (tmp / PARTIAL_MARKER).write_text(json.dumps({"partial": True, "completed": done, "requested": requested,
                                                   "reason": reason}) + "\n")


@contextlib.contextmanager
def maybe_staged(out_dir: str | Path | None, flag: str = "--out", *,
                 keep_partial: bool = False) -> Iterator[Path | None]:
    """:func:`staged` when ``out_dir`` is given, else yields None (nothing to write)."""
    if out_dir is None:
        yield None
        return
    with staged(out_dir, flag, keep_partial=keep_partial) as tmp:
        yield tmp


@contextlib.contextmanager
def staged_file(path: str | Path, flag: str) -> Iterator[Path]:
    """One output file: yields a temporary path in the same directory, renamed to ``path`` only
    when the block succeeds."""
    out = Path(path)
    if out.is_dir():
        raise MpccError(f"{flag} {out}: is a directory (fix: give a file name, e.g. {out}/trace.parquet)")
    parent = out.parent if str(out.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale(parent, out)
        fd, name = tempfile.mkstemp(prefix=_prefix(out), dir=parent)
        os.fchmod(fd, 0o666 & ~_umask())       # mkstemp's 0600 → what open() would give
        os.close(fd)
    except OSError as e:
        _fail(flag, out, "cannot create it", e)
    tmp = Path(name)
    try:
        try:
            yield tmp
            os.replace(tmp, out)
        except OSError as e:
            _fail(flag, out, "cannot write", e)
    finally:
        if tmp.exists():
            tmp.unlink()


def relocate(obj, tmp: Path | None, out: str | Path | None):
    """``obj`` (a report: dicts, lists, strings, Paths) with paths under the staging directory
    ``tmp`` rewritten to the final directory ``out``."""
    if tmp is None or out is None:
        return obj
    t, o = str(tmp), str(out)
    if isinstance(obj, Path):
        return Path(relocate(str(obj), tmp, out))
    if isinstance(obj, str):
        return o + obj[len(t):] if obj.startswith(t) else obj
    if isinstance(obj, dict):
        return {k: relocate(v, tmp, out) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(relocate(v, tmp, out) for v in obj)
    return obj
