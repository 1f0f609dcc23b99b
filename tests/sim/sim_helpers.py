

from mpcc import scenario


def single_link(capacity=10.0, delay_ms=10.0, buffer=50, groups="", duration=40.0, aqm="", sim=""):
    """A one-link scenario; ``groups`` are [[groups]] tables on path ["l"]."""
    return scenario.loads(f"""
name = "test"
duration_s = {duration}
[[links]]
name = "l"
capacity_mbps = {capacity}
delay_ms = {delay_ms}
buffer_pkts = {buffer}
{aqm}
{groups}
{sim}
""")


def group(name, algo="reno", count=1, paths='[["l"]]', extra=""):
    return f"""
[[groups]]
name = "{name}"
count = {count}
algorithm = "{algo}"
paths = {paths}
{extra}
"""

