"""The kernel lab: what a user runs to check the BPF congestion controls beyond one scenario.

* ``mpcc lab kernels``: every BPF program on other kernels (Debian's LTS kernels under qemu,
  :mod:`.kernels`, :mod:`.guestvm`) and on the running one (:mod:`.kernels_check`);
* ``mpcc lab churn``: the subflow-churn soak (:mod:`.churn`; in a qemu guest: :mod:`.guest_churn`);
* ``mpcc lab scale``: many concurrent connections (:mod:`.scale`);
* the soak's headers-only packet capture and its reader (:mod:`.pcap`, ``mpcc lab churn --pcap``).

:mod:`.netlab` builds their namespace labs on the testbed's namespace records
(:mod:`mpcc.testbed.netns`). Results are written under ``bench/kernel/`` of the checkout.
"""

from pathlib import Path

#: the checkout (an editable install: python/mpcc/lab → the repository root)
ROOT = Path(__file__).resolve().parents[3]
#: where the lab's results are recorded (bench/kernel/*.json)
RESULTS_DIR = ROOT / "bench" / "kernel"
