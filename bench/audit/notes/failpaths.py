"""Failure paths of `mpcc testbed` (bench/audit/RESULTS.md): SIGINT mid-run with --out, SIGINT
during set-up, SIGKILL then the next run, clang hidden from PATH, a caller namespace with
net.mptcp.enabled = 0. Prints the state (namespaces, run records, linkem/traffic processes,
qdiscs, struct_ops) after each; needs root. Run under the bench lock:

    flock /tmp/mpcc-bench.lock sudo .venv/bin/python bench/audit/notes/failpaths.py
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import tempfile

HERE = Path(__file__).resolve().parents[3] / "scenarios" / "audit"
MPCC = str(Path(__file__).resolve().parents[3] / ".venv/bin/mpcc")
W = Path(tempfile.mkdtemp(prefix="mpcc-failpaths-"))


def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()


def state(tag):
    ns = [n for n in sh("ip netns list").split("\n") if n.startswith("mpcc-tb")]
    runs = sorted(p.name for p in Path("/run/mpcc").iterdir() if p.name.startswith("tb")) if Path("/run/mpcc").is_dir() else []
    so = sh("bpftool struct_ops list")
    procs = sh("ps -eo pid,ppid,args | grep -E 'linkem|mpcc.testbed.traffic' | grep -v grep")
    qd = sh("tc qdisc show | grep -v -E 'noqueue|fq_codel|pfifo_fast|mq |qdisc fq |tbf' || true")
    print(f"[{tag}] netns={ns} run_records={runs} procs={procs!r} qdisc_extra={qd!r}\n    struct_ops={so!r}", flush=True)
    return ns, runs, procs


def start(args, env=None, netns=None):
    cmd = [MPCC, "testbed", *args]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    # SIGINT at its default, as from a terminal (a job started with `&` inherits it ignored)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def finish(p, tag, timeout=120):
    out, err = p.communicate(timeout=timeout)
    lines = [l for l in err.splitlines() if l.strip()]
    print(f"[{tag}] rc={p.returncode} stderr_lines={len(lines)}: {lines[-3:]}", flush=True)
    return out, err


print("date", time.strftime("%F %T"), "load", open("/proc/loadavg").read().split()[:3], flush=True)
state("before")

# 1. SIGINT during the second of two runs, with --out: run 0 kept, PARTIAL.json, nothing left
out1 = W / "int"
p = start([str(HERE / "a4-mix.toml"), "--duration", "6", "--runs", "2",
           "--no-progress", "--out", str(out1)])
time.sleep(14)
state("1: mid run 2")
p.send_signal(signal.SIGINT)
finish(p, "1: SIGINT")
time.sleep(1)
state("1: after")
print("[1] out:", sorted(x.name for x in out1.iterdir()) if out1.exists() else None,
      (out1 / "PARTIAL.json").read_text().strip() if (out1 / "PARTIAL.json").exists() else "no PARTIAL.json", flush=True)
print("[1] stale tmp dirs:", [x.name for x in W.iterdir() if ".tmp-" in x.name], flush=True)

# 2. SIGINT during set-up / first seconds: nothing published, nothing left
out2 = W / "int-early"
p = start([str(HERE / "a5-tiny-fast.toml"), "--duration", "10", "--no-progress", "--out", str(out2)])
time.sleep(2.5)
p.send_signal(signal.SIGINT)
finish(p, "2: early SIGINT")
time.sleep(1)
state("2: after")
print("[2] out exists:", out2.exists(), "stale tmp:", [x.name for x in W.iterdir() if ".tmp-" in x.name], flush=True)

# 3. SIGKILL mid-run, then a normal next run cleans the stale state first
out3 = W / "kill"
p = start([str(HERE / "a4-mix.toml"), "--duration", "20", "--no-progress", "--out", str(out3)])
time.sleep(8)
killed_pid = p.pid
p.send_signal(signal.SIGKILL)
p.communicate()
time.sleep(1)
ns, runs, procs = state("3: after SIGKILL")
p = start([str(HERE / "a5-tiny-fast.toml"), "--duration", "4", "--no-progress", "--json"])
time.sleep(1.5)
state("3: next run starting")
out, err = finish(p, "3: next run")
try:
    r = json.loads(out)
    print("[3] next run ok:", {g: round(v["rate_mbps"], 3) for g, v in r["groups"].items()}, flush=True)
except Exception as e:
    print("[3] next run output not JSON:", out[:200], flush=True)
state("3: after next run")
print("[3] stale tmp dirs:", [x.name for x in W.iterdir() if ".tmp-" in x.name], flush=True)

# 4. clang hidden from PATH, an algorithm set the package does not ship
env = dict(os.environ, PATH="/nonexistent")
bindir = W / "bin-noclang"
bindir.mkdir(exist_ok=True)
for d in ("/usr/local/bin", "/usr/bin", "/usr/sbin", "/sbin", "/bin"):
    for exe in Path(d).iterdir() if Path(d).is_dir() else []:
        if exe.name.startswith(("clang", "llc", "llvm")) or (bindir / exe.name).exists():
            continue
        (bindir / exe.name).symlink_to(exe)
env["PATH"] = str(bindir)
p = start([str(HERE / "a5-tiny-fast.toml"), "--duration", "4", "--no-progress", "--algorithm", "ewtcp(a=0.37)"], env=env)
finish(p, "4: clang hidden, ewtcp(a=0.37)")
state("4: after")
p = start([str(HERE / "a5-tiny-fast.toml"), "--duration", "4", "--no-progress", "--algorithm", "lia", "--json"], env=env)
out, err = finish(p, "4b: clang hidden, lia (shipped)")
state("4b: after")

# 5. run from a namespace whose net.mptcp.enabled = 0
sh("ip netns add audit7-nomptcp && ip netns exec audit7-nomptcp sysctl -qw net.mptcp.enabled=0")
print("[5] mptcp.enabled in that ns:", sh("ip netns exec audit7-nomptcp sysctl -n net.mptcp.enabled"), flush=True)
p = start([str(HERE / "a5-tiny-fast.toml"), "--duration", "4", "--no-progress", "--json"], netns="audit7-nomptcp")
out, err = finish(p, "5: from a netns with mptcp disabled")
try:
    r = json.loads(out)
    print("[5] ok:", {g: round(v["rate_mbps"], 3) for g, v in r["groups"].items()}, flush=True)
except Exception:
    print("[5] output:", out[:200], flush=True)
sh("ip netns del audit7-nomptcp")
state("5: after")
print("outputs in", W)
print("date", time.strftime("%F %T"), flush=True)
