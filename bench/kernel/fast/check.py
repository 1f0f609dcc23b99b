"""Check the FAST runs of bench/kernel/fast/run.sh against issue 14's targets and print one
Markdown row each (for bench/kernel/RESULTS.md):

* one flow, α = 20 packets, 20 Mb/s, 20 ms: mean queue within α ± 50 % (10–30 packets) and
  link utilisation ≥ 90 %;
* two flows, α = 10 and 30: rate ratio fast30/fast10 within 3 ± 20 % (2.4–3.6).

    .venv/bin/python bench/kernel/fast/check.py OUTDIR      (exit 1 if a target is missed)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(out: Path) -> int:
    ok = True
    one = json.loads((out / "one-flow.json").read_text())
    link = one["links"]["l1"]
    q, util, drops = link["queue_mean_pkts"], link["utilisation"], link["drops"]
    good = 10 <= q <= 30 and util >= 0.90
    ok &= good
    print(f"| one FAST flow, α = 20 | queue {q:.1f} pkts (target 10–30), utilisation {100 * util:.1f} % "
          f"(≥ 90), drops {drops}, rate {one['groups']['fast20']['rate_mbps']:.2f} Mb/s | {'pass' if good else 'FAIL'} |")
    two = json.loads((out / "two-flows.json").read_text())
    r10, r30 = two["groups"]["fast10"]["rate_mbps"], two["groups"]["fast30"]["rate_mbps"]
    link = two["links"]["l1"]
    ratio = r30 / r10 if r10 > 0 else float("inf")
    good = 2.4 <= ratio <= 3.6
    ok &= good
    print(f"| two FAST flows, α = 10 / 30 | {r10:.2f} / {r30:.2f} Mb/s, ratio {ratio:.2f} (target 2.4–3.6), "
          f"queue {link['queue_mean_pkts']:.1f} pkts (α sum 40), utilisation {100 * link['utilisation']:.1f} %, "
          f"drops {link['drops']} | {'pass' if good else 'FAIL'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "build/fast-bench")))
