"""The Rust core's output columns, read without numpy unless an array is asked for.

The core returns ``{name: (dtype, bytes)}`` (dtype ``"<f8"``, ``"<u8"`` or ``"<u4"``,
``crates/mpcc-py/src/lib.rs``). :class:`Columns` keeps those buffers: ``cols.tolist(name)``
reads one as a Python list (the standard ``array`` module), ``cols[name]`` as a numpy array
(numpy is imported then, on first use). The summary of a run (:func:`mpcc.sim.engine.summarize`)
needs only the lists, so ``mpcc sim --json`` never loads numpy.

:func:`pairwise_sum` adds floats in the order numpy's ``add.reduce`` does for a contiguous
float64 array (pairwise, eight accumulators per block of ≤ 128), so sums and means computed
here are bit-identical to the numpy expressions they stand for (``tests/sim/test_columns.py``
checks this against numpy).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping
from typing import Any, Iterator, Sequence

#: numpy dtype string → ``array`` type code of the same width.
_TYPECODES = {"<f8": "d", "<u8": "Q", "<u4": "I"}


def _typecode(dtype: str) -> str:
    code = _TYPECODES.get(dtype)
    if code is None or array(code).itemsize != int(dtype[2:]):
        raise ValueError(f"unsupported column dtype {dtype!r} from the simulator core")
    return code


class Columns(Mapping):
    """``{name: numpy array}`` over the core's raw buffers, converted on access (cached);
    :meth:`tolist` reads a column without numpy. Picklable (plain bytes)."""

    def __init__(self, raw: Mapping[str, tuple[str, bytes]]):
        self._raw = dict(raw)
        self._arrays: dict[str, Any] = {}

    def __getitem__(self, name: str):
        a = self._arrays.get(name)
        if a is None:
            import numpy as np

            dtype, buf = self._raw[name]
            a = self._arrays[name] = np.frombuffer(buf, dtype=dtype)
        return a

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, name: object) -> bool:
        return name in self._raw   # (Mapping's default would convert the column to numpy)

    def tolist(self, name: str) -> list:
        """Column ``name`` as a list of Python ints / floats (what ``self[name].tolist()`` gives)."""
        dtype, buf = self._raw[name]
        a = array(_typecode(dtype))
        a.frombytes(buf)
        if sys.byteorder != "little":   # the core writes little-endian
            a.byteswap()
        return a.tolist()

    def __getstate__(self):
        return {"_raw": self._raw}

    def __setstate__(self, state):
        self._raw, self._arrays = state["_raw"], {}


def as_list(cols: Mapping[str, Any], name: str) -> list:
    """Column ``name`` of ``cols`` (:class:`Columns`, numpy arrays or sequences) as a list."""
    if isinstance(cols, Columns):
        return cols.tolist(name)
    col = cols[name]
    return col.tolist() if hasattr(col, "tolist") else list(col)


def _pairwise(a: Sequence[float], lo: int, n: int) -> float:
    """numpy's ``pairwise_sum`` of ``a[lo:lo + n]`` (numpy/_core/src/umath/loops_utils.h.src)."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r = list(a[lo:lo + 8])
        i, end = 8, n - n % 8
        while i < end:
            for j in range(8):
                r[j] += a[lo + i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for k in range(lo + i, lo + n):
            res += a[k]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a, lo, n2) + _pairwise(a, lo + n2, n - n2)


def pairwise_sum(values: Sequence[float]) -> float:
    """``float(np.sum(np.asarray(values, float)))``, bit for bit, without numpy."""
    return float(_pairwise([float(v) for v in values], 0, len(values))) if len(values) else 0.0


def mean(values: Sequence[float]) -> float:
    """``float(np.mean(values))`` bit for bit (NaN for no values, where numpy warns)."""
    return pairwise_sum(values) / len(values) if len(values) else float("nan")


def column_means(rows: Sequence[Sequence[float]]) -> list[float]:
    """``np.array(rows).mean(axis=0).tolist()`` bit for bit: numpy adds the rows one after the
    other, except for a single column, which it reduces as one contiguous vector (pairwise)."""
    n = len(rows)
    width = len(rows[0]) if n else 0
    if n == 0:
        return [float("nan")] * width
    if width == 1:
        return [mean([r[0] for r in rows])]
    acc = [float(x) for x in rows[0]]
    for r in rows[1:]:
        for j in range(width):
            acc[j] += r[j]
    return [x / n for x in acc]
