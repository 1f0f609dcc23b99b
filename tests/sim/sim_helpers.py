

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
    """A [[groups]] table; ``algo``: a name, or a TOML inline table ({name = "olia", per_ack = 1})."""
    algo = algo if algo.startswith("{") else f'"{algo}"'
    return f"""
[[groups]]
name = "{name}"
count = {count}
algorithm = {algo}
paths = {paths}
{extra}
"""

