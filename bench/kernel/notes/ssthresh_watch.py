"""Who leaves tcp_sock.snd_ssthresh above 0x7fffffff? (bench/kernel/notes/CHURN.md §3c; root, bpftrace.)

A bpftrace script on two tracepoints (fentry/kprobes are not available on this testbed's kernel):
at each congestion-state change (tcp_cong_state_set, right after tcp_enter_cwr / _recovery / _loss
wrote snd_ssthresh = ca_ops->ssthresh(sk)) a value above 0x7fffffff (TCP_INFINITE_SSTHRESH) is
printed with its stack, the CA's name and the mpcc CA area's ss_ret / ss_calls (what our
ssthresh() last returned, how often it ran; struct mpcc_ca in bpf/include/mpcc_kern.h); at each
segment tcp_rcv_established takes (tcp_probe, before tcp_ack) a bad value and a window > 10^6 are
counted.

    python bench/kernel/notes/ssthresh_watch.py [--out FILE] -- run alongside churn.py, stop with SIGINT
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mpcc.lab import netlab  # noqa: E402


def btf_offset(struct: str, member: str) -> int:
    out = subprocess.run(["bpftool", "-j", "btf", "dump", "file", "/sys/kernel/btf/vmlinux"],
                         capture_output=True, text=True, check=True).stdout
    for t in json.loads(out)["types"]:
        if t.get("kind") == "STRUCT" and t.get("name") == struct:
            for m in t["members"]:
                if m["name"] == member:
                    return m["bits_offset"] // 8
    raise SystemExit(f"ssthresh_watch: no {struct}.{member} in the kernel's BTF")


def socket_exprs() -> tuple[str, str, str, str]:
    """bpftrace expressions over a tcp tracepoint's skaddr: the tcp_sock, the
    inet_connection_sock, and our mpcc_ca's ss_ret and ss_calls (bytes 0 and 4 of the CA area)."""
    ca = btf_offset("inet_connection_sock", "icsk_ca_priv")
    return ("((struct tcp_sock *)args->skaddr)",
            "((struct inet_connection_sock *)args->skaddr)",
            f"*(uint32 *)((uint64)args->skaddr + {ca})",
            f"*(uint32 *)((uint64)args->skaddr + {ca + 4})")


def script() -> str:
    """tcp_cong_state_set fires in tcp_set_ca_state(), which tcp_enter_cwr / tcp_enter_recovery /
    tcp_enter_loss call right after writing snd_ssthresh = ca_ops->ssthresh(sk): the value seen
    there is the one just written. tcp_probe fires for each segment tcp_rcv_established takes,
    before tcp_ack (and so before the repair in our cong_control, at the end of tcp_ack)."""
    sk, icsk, ss_ret, ss_calls = socket_exprs()
    return f"""tracepoint:tcp:tcp_cong_state_set {{
  $ss = {sk}->snd_ssthresh; $calls = {ss_calls};
  if ($ss > 0x7fffffff) {{
    @bad_at_state_set[args->cong_state, {icsk}->icsk_ca_state, $ss == {ss_ret}, $calls != @calls[args->skaddr]] = count();
    printf("BAD state %d->%d t=%lld cpu=%d comm=%s ca=%s ss=%u (0x%x) cwnd=%u prior_cwnd=%u prior_ss=%u ss_ret=%u ss_calls=%u->%u%s\\n",
      {icsk}->icsk_ca_state, args->cong_state, nsecs, cpu, comm, {icsk}->icsk_ca_ops->name, $ss, $ss,
      {sk}->snd_cwnd, {sk}->prior_cwnd, {sk}->prior_ssthresh, {ss_ret}, @calls[args->skaddr], $calls, kstack(14));
  }}
  @calls[args->skaddr] = $calls;
  @state_sets = count();
}}
tracepoint:tcp:tcp_probe /args->ssthresh > 0x7fffffff/ {{
  @bad_in_probe = count(); @nseen++;
  if (args->snd_cwnd > 1000000) {{ @huge_cwnd_in_probe = count(); }}
  if (@nseen <= 40) {{
    printf("SEEN t=%lld ss=%u cwnd=%u state=%d ss_ret=%u calls=%u\\n", nsecs, args->ssthresh, args->snd_cwnd,
      {icsk}->icsk_ca_state, {ss_ret}, {ss_calls});
  }}
}}
tracepoint:tcp:tcp_destroy_sock {{ delete(@calls[args->skaddr]); }}
END {{ clear(@calls); clear(@nseen); }}
"""


def log_script() -> str:
    """Everything about the sockets, for the offline reconstruction (--log): each congestion-state
    change of any TCP socket (S: old, new, sk_state, ssthresh, our ss_calls/ss_ret, cwnd,
    prior_cwnd, prior_ssthresh, the CA's name, comm), each change of ssthresh seen by tcp_probe
    (P), and each TCP state change (K)."""
    sk, icsk, ss_ret, ss_calls = socket_exprs()
    return f"""tracepoint:tcp:tcp_cong_state_set {{
  printf("S %lld %llx %d %d %d %s %u %u %u %u %u %u %d %s\\n", nsecs, args->skaddr, cpu, {icsk}->icsk_ca_state, args->cong_state,
    comm, {sk}->snd_ssthresh, {ss_calls}, {ss_ret}, {sk}->snd_cwnd, {sk}->prior_cwnd, {sk}->prior_ssthresh,
    ((struct sock *)args->skaddr)->__sk_common.skc_state, {icsk}->icsk_ca_ops->name);
}}
tracepoint:tcp:tcp_probe /args->ssthresh != @lastss[args->skaddr]/ {{
  printf("P %lld %llx %d %d %u %u %u %u %s\\n", nsecs, args->skaddr, cpu, {icsk}->icsk_ca_state, args->ssthresh, args->snd_cwnd,
    {ss_calls}, {ss_ret}, {icsk}->icsk_ca_ops->name);
  @lastss[args->skaddr] = args->ssthresh;
}}
tracepoint:sock:inet_sock_set_state /args->protocol == 6/ {{
  printf("K %lld %llx %d %d %d %u %d %s\\n", nsecs, args->skaddr, cpu, args->oldstate, args->newstate,
    {sk}->snd_ssthresh, {icsk}->icsk_ca_state, comm);
}}
tracepoint:tcp:tcp_destroy_sock {{ delete(@lastss[args->skaddr]); }}
END {{ clear(@lastss); }}
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--print", action="store_true", help="print the script and exit")
    ap.add_argument("--log", action="store_true", help="the full per-socket log (log_script) instead")
    ap.add_argument("--out", help="bpftrace output file")
    a = ap.parse_args(argv)
    s = log_script() if a.log else script()
    if a.print:
        sys.stdout.write(s)
        return 0
    cmd = ["bpftrace", "-e", s] + (["-o", a.out] if a.out else [])
    try:
        with netlab.tracefs("tcp"):
            try:
                return subprocess.call(cmd)
            except KeyboardInterrupt:   # SIGINT stops bpftrace too; tracefs is unmounted on the way out
                return 130
    except RuntimeError as e:
        print(f"ssthresh_watch: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
