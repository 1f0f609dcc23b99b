"""Time series of a simulation as plain numpy columns.

A :class:`Frame` is a ``dict`` of equally long numpy arrays (``frame["cwnd_pkts"]``); the
``group`` and ``link`` columns hold names (object arrays). Pyarrow is imported only when a
frame is written (:meth:`Frame.to_arrow`, used by :mod:`mpcc.sim.output`), so a run that
prints JSON never loads it.

``subflows``: time_s, group, flow, route, cwnd_pkts, srtt_s, rate_mbps (over the last
interval), loss_events (cumulative window reductions), for flows active at the sample time.
``links``: time_s, link, queue_pkts, drops (cumulative).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

#: Columns holding names (written as Arrow dictionary arrays).
NAME_COLUMNS = ("group", "link")


class Frame(dict):
    """Columns of one time series: ``{name: numpy array}``, all of the same length."""

    @property
    def num_rows(self) -> int:
        return len(next(iter(self.values()))) if self else 0

    @property
    def column_names(self) -> list[str]:
        return list(self)

    def where(self, mask: np.ndarray) -> "Frame":
        """The rows where ``mask`` is true."""
        return Frame({k: v[mask] for k, v in self.items()})

    def to_arrow(self, extra: Mapping[str, np.ndarray] | None = None):
        """A ``pyarrow.Table`` of the columns (name columns dictionary-encoded), plus ``extra``."""
        import pyarrow as pa

        cols = {}
        for k, v in {**self, **(extra or {})}.items():
            if k in NAME_COLUMNS:
                cols[k] = pa.array(v.tolist(), pa.string()).dictionary_encode()
            else:
                cols[k] = pa.array(v)
        return pa.table(cols)


def from_core(group_names, link_names, cols: Mapping[str, np.ndarray]) -> dict[str, Frame]:
    """``{"subflows": Frame, "links": Frame}`` from the Rust core's output columns."""
    ids = cols["ts_sf_id"].astype(np.int64)
    gnames = np.array(list(group_names), dtype=object)
    lnames = np.array(list(link_names), dtype=object)
    subflows = Frame({
        "time_s": cols["ts_sf_time"],
        "group": gnames[cols["sf_group"][ids]] if len(ids) else np.array([], dtype=object),
        "flow": cols["sf_flow"][ids],
        "route": cols["sf_route"][ids],
        "cwnd_pkts": cols["ts_cwnd"],
        "srtt_s": cols["ts_srtt"],
        "rate_mbps": cols["ts_rate"],
        "loss_events": cols["ts_losses"],
    })
    link_ids = cols["ts_link_id"].astype(np.int64)
    links = Frame({
        "time_s": cols["ts_link_time"],
        "link": lnames[link_ids] if len(link_ids) else np.array([], dtype=object),
        "queue_pkts": cols["ts_queue"],
        "drops": cols["ts_drops"],
    })
    return {"subflows": subflows, "links": links}
