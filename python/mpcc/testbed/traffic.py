"""Traffic inside the testbed namespaces: bulk senders (client) and byte-counting receivers
(server), plus the per-subflow sampler. Run by the testbed as

    ip netns exec <client-ns> python -m mpcc.testbed.traffic send PLAN.json
    ip netns exec <server-ns> python -m mpcc.testbed.traffic recv PLAN.json

Multipath groups use kernel MPTCP sockets (IPPROTO_MPTCP = 262); the congestion control is
set with setsockopt(TCP_CONGESTION) on the MPTCP socket, which upstream MPTCP applies to every
subflow. Single-path groups are plain TCP bound to their path's address.

Samples (CSV, CLOCK_MONOTONIC seconds, the clock linkem also uses):
  sender   t,group,flow,local,route,cwnd,srtt_us,bytes_acked,ssthresh,total_retrans,unacked,busy_us,
           rwnd_limited_us,sndbuf_limited_us
  receiver t,group,flow,bytes
  msk      t,group,flow,outq,notsent,sndbuf,snd_wnd,bytes_retrans,sub_notsent  (multipath flows: the
           MPTCP connection level — SIOCOUTQ / SIOCOUTQNSD of the MPTCP socket, its SO_SNDBUF, the
           peer's advertised connection-level window as the subflows see it, MPTCP_INFO
           bytes_retrans, and the bytes queued on the subflows but not yet sent, Σ tcpi_notsent_bytes)
"""

from __future__ import annotations

import array
import ctypes
import errno
import fcntl
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_INFO = 1
MPTCP_TCPINFO = 2
MPTCP_INFO_SIZE = 96  # struct mptcp_info up to mptcpi_last_ack_recv (Linux ≥ 6.10); kernel copies min()
SIOCOUTQ = 0x5411  # MPTCP socket: write_seq − snd_una (queued + in flight at the connection level)
SIOCOUTQNSD = 0x894B  # MPTCP socket: write_seq − snd_nxt (not yet handed to any subflow)
MPTCP_SUBFLOW_ADDRS = 3
TCP_CONGESTION = 13
TCP_INFO = 11
MAX_SUBFLOWS = 8
TCPI_SIZE = 236  # struct tcp_info up to tcpi_rcv_wnd (Linux ≥ 6.2); kernel copies min()
SUBFLOW_ADDRS_SIZE = 256  # struct mptcp_subflow_addrs: two __kernel_sockaddr_storage
CLONE_NEWNET = 0x40000000
HEADER = struct.Struct("!II")  # (group index, flow index) at the start of every connection

_libc = ctypes.CDLL(None, use_errno=True)


def enter_netns(name: str | None) -> None:
    """Move the calling thread into network namespace ``name`` (setns is per thread: sockets it
    creates afterwards live there; other threads keep theirs)."""
    if not name:
        return
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
    finally:
        os.close(fd)


def _pdeathsig():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: never outlive the testbed


def parse_tcp_info(b: bytes) -> dict:
    """Fields of struct tcp_info (include/uapi/linux/tcp.h) used by the testbed."""
    unacked, = struct.unpack_from("=I", b, 24)
    rtt, _rttvar, ssthresh, cwnd = struct.unpack_from("=IIII", b, 68)
    total_retrans, = struct.unpack_from("=I", b, 100)
    bytes_acked, = struct.unpack_from("=Q", b, 120)
    # chrono stats (µs): time with data in flight, and limited by the receive window / send buffer
    busy, rwnd_limited, sndbuf_limited = struct.unpack_from("=QQQ", b, 168) if len(b) >= 192 else (0, 0, 0)
    notsent, = struct.unpack_from("=I", b, 144) if len(b) >= 148 else (0,)  # queued on this subflow, not sent
    snd_wnd, = struct.unpack_from("=I", b, 228) if len(b) >= 232 else (0,)  # the peer's advertised window, bytes
    return {"snd_wnd": snd_wnd, "notsent_bytes": notsent,
            "state": b[0], "ca_state": b[1], "srtt_us": rtt, "ssthresh": ssthresh, "cwnd": cwnd,
            "total_retrans": total_retrans, "bytes_acked": bytes_acked, "unacked": unacked,
            "busy_us": busy, "rwnd_limited_us": rwnd_limited, "sndbuf_limited_us": sndbuf_limited}


def _getsockopt(fd: int, level: int, opt: int, buf: ctypes.Array) -> int:
    ln = ctypes.c_uint32(len(buf))
    if _libc.getsockopt(fd, level, opt, buf, ctypes.byref(ln)) != 0:
        return -ctypes.get_errno()
    return ln.value


def mptcp_subflows(fd: int) -> list[tuple[str, dict]]:
    """(local address, tcp_info) of every subflow of an MPTCP socket, via MPTCP_TCPINFO and
    MPTCP_SUBFLOW_ADDRS (both walk the subflow list in the same order)."""
    out = []
    hdr = struct.pack("=IIII", 16, 0, 0, TCPI_SIZE)
    b1 = ctypes.create_string_buffer(hdr + bytes(MAX_SUBFLOWS * TCPI_SIZE))
    b2 = ctypes.create_string_buffer(struct.pack("=IIII", 16, 0, 0, SUBFLOW_ADDRS_SIZE)
                                     + bytes(MAX_SUBFLOWS * SUBFLOW_ADDRS_SIZE))
    if _getsockopt(fd, SOL_MPTCP, MPTCP_TCPINFO, b1) < 0 or _getsockopt(fd, SOL_MPTCP, MPTCP_SUBFLOW_ADDRS, b2) < 0:
        return out
    n1 = min(struct.unpack_from("=I", b1.raw, 4)[0], MAX_SUBFLOWS)
    n2 = min(struct.unpack_from("=I", b2.raw, 4)[0], MAX_SUBFLOWS)
    if n1 != n2:  # a subflow came or went between the two calls: skip this sample
        return out
    for i in range(n1):
        info = parse_tcp_info(b1.raw[16 + i * TCPI_SIZE: 16 + (i + 1) * TCPI_SIZE])
        a = b2.raw[16 + i * SUBFLOW_ADDRS_SIZE:]
        family, = struct.unpack_from("=H", a, 0)
        local = socket.inet_ntoa(a[4:8]) if family == socket.AF_INET else "?"
        out.append((local, info))
    return out


def _ioctl_int(fd: int, req: int) -> int:
    b = array.array("i", [0])
    fcntl.ioctl(fd, req, b)
    return b[0]


def msk_sample(s: socket.socket, subs: list[tuple[str, dict]]) -> tuple[int, int, int, int, int, int]:
    """The MPTCP connection level of socket ``s``: bytes queued or in flight (SIOCOUTQ), bytes not
    yet handed to a subflow (SIOCOUTQNSD), the send buffer, the peer's advertised window (largest
    over the subflows ``subs``: one shared window), MPTCP_INFO's bytes re-sent at the connection
    level and the bytes queued on the subflows but not yet sent."""
    fd = s.fileno()
    if fd < 0:   # its flow closed it since the sampler listed it: the sampler skips it (OSError)
        raise OSError(errno.EBADF, "socket closed")
    outq, notsent = _ioctl_int(fd, SIOCOUTQ), _ioctl_int(fd, SIOCOUTQNSD)
    sndbuf = s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    info = s.getsockopt(SOL_MPTCP, MPTCP_INFO, MPTCP_INFO_SIZE)
    retrans, = struct.unpack_from("=Q", info, 48) if len(info) >= 56 else (0,)
    return (outq, notsent, sndbuf, max((i["snd_wnd"] for _, i in subs), default=0), retrans,
            sum(i["notsent_bytes"] for _, i in subs))


def tcp_subflow(sock: socket.socket) -> list[tuple[str, dict]]:
    b = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCPI_SIZE)
    return [(sock.getsockname()[0], parse_tcp_info(b))]


def _sleep_until(t: float, stop: threading.Event) -> bool:
    while True:
        d = t - time.monotonic()
        if d <= 0:
            return not stop.is_set()
        if stop.wait(min(d, 0.5)):
            return False


# --- sender --------------------------------------------------------------------------------------
def send(plan: dict) -> None:
    t0 = plan["t0"]
    stop = threading.Event()
    socks: dict[tuple[int, int], socket.socket] = {}
    lock = threading.Lock()
    errors: list[str] = []

    def flow(g: dict, k: int) -> None:
        if not _sleep_until(t0 + g["start_s"], stop):
            return
        try:
            enter_netns(g.get("netns"))
            proto = IPPROTO_MPTCP if g["multipath"] else socket.IPPROTO_TCP
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, g["cc"].encode())
            if g.get("bind_addr"):
                s.bind((g["bind_addr"], 0))
            # a blocking connect: the kernel's own SYN retransmissions (tcp_syn_retries, 1 s
            # doubling) recover a SYN lost in a full queue; only the run's end cuts it short
            s.settimeout(max(1.0, t0 + g["stop_s"] - time.monotonic()))
            s.connect((g["server_addr"], g["port"]))
            s.sendall(HEADER.pack(g["index"], k))
        except OSError as e:
            errors.append(f"group {g['name']} flow {k}: connect: {e}")
            return
        with lock:
            socks[(g["index"], k)] = s
        buf = bytes(65536)
        s.settimeout(0.2)
        end = t0 + g["stop_s"]
        while time.monotonic() < end and not stop.is_set():
            try:
                s.send(buf)
            except socket.timeout:
                pass
            except OSError as e:
                errors.append(f"group {g['name']} flow {k}: {e}")
                break
        with lock:
            socks.pop((g["index"], k), None)
        s.close()

    threads = [threading.Thread(target=flow, args=(g, k), daemon=True)
               for g in plan["groups"] for k in range(g["count"])]
    threads += [threading.Thread(target=background, args=(b, t0, stop), daemon=True) for b in plan["background"]]
    for th in threads:
        th.start()
    routes = {g["index"]: g["routes"] for g in plan["groups"]}
    mp = {g["index"]: g["multipath"] for g in plan["groups"]}
    end = t0 + plan["duration_s"]
    dt = plan["sample_s"]
    msk_path = plan.get("msk_csv") or os.devnull
    with open(plan["sender_csv"], "w") as out, open(msk_path, "w") as msk:
        out.write("t,group,flow,local,route,cwnd,srtt_us,bytes_acked,ssthresh,total_retrans,unacked,busy_us,"
                  "rwnd_limited_us,sndbuf_limited_us\n")
        msk.write("t,group,flow,outq,notsent,sndbuf,snd_wnd,bytes_retrans,sub_notsent\n")
        nxt = max(time.monotonic(), t0)
        while time.monotonic() < end + 0.05:
            _sleep_until(nxt, threading.Event())
            nxt += dt
            with lock:
                items = list(socks.items())
            now = time.monotonic()
            for (gi, k), s in items:
                try:
                    subs = mptcp_subflows(s.fileno()) if mp[gi] else tcp_subflow(s)
                    if mp[gi]:
                        msk.write(f"{now:.6f},{gi},{k}," + ",".join(map(str, msk_sample(s, subs))) + "\n")
                except OSError:
                    continue
                for local, i in subs:
                    route = routes[gi].get(local, -1)
                    out.write(f"{now:.6f},{gi},{k},{local},{route},{i['cwnd']},{i['srtt_us']},"
                              f"{i['bytes_acked']},{i['ssthresh']},{i['total_retrans']},{i['unacked']},"
                              f"{i['busy_us']},{i['rwnd_limited_us']},{i['sndbuf_limited_us']}\n")
            out.flush()
            msk.flush()
    stop.set()
    for th in threads:
        th.join(timeout=2)
    if errors:
        print("\n".join(sorted(set(errors))[:10]), file=sys.stderr)
        sys.exit(3)


def background(b: dict, t0: float, stop: threading.Event) -> None:
    """On-off UDP source (Jiang et al. Fig. 12): exponential on/off periods, constant rate on."""
    rng = random.Random(b.get("seed", 1))
    enter_netns(b.get("netns"))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((b["bind_addr"], 0))
    payload = bytes(max(1, b["packet_bytes"] - 28))
    gap = b["packet_bytes"] * 8 / (b["rate_mbps"] * 1e6)
    if not _sleep_until(t0 + b["start_s"], stop):
        return
    end = t0 + b["stop_s"]
    while time.monotonic() < end and not stop.is_set():
        on_end = min(end, time.monotonic() + rng.expovariate(1.0 / b["mean_on_s"]))
        nxt = time.monotonic()
        while time.monotonic() < on_end and not stop.is_set():
            try:
                s.sendto(payload, (b["server_addr"], b["port"]))
            except OSError:
                pass
            nxt += gap
            d = nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
        if b["mean_off_s"] > 0:
            _sleep_until(time.monotonic() + rng.expovariate(1.0 / b["mean_off_s"]), stop)


# --- receiver ------------------------------------------------------------------------------------
def recv(plan: dict) -> None:
    counts: dict[tuple[int, int], int] = {}
    stop = threading.Event()

    def conn(c: socket.socket) -> None:
        try:
            hdr = b""
            while len(hdr) < HEADER.size:
                more = c.recv(HEADER.size - len(hdr))
                if not more:
                    return
                hdr += more
            key = HEADER.unpack(hdr)
            counts.setdefault(key, 0)
            buf = bytearray(262144)
            while True:
                n = c.recv_into(buf)
                if n <= 0:
                    break
                counts[key] += n
        except OSError:
            pass
        finally:
            c.close()

    def listener(g: dict) -> None:
        proto = IPPROTO_MPTCP if g["multipath"] else socket.IPPROTO_TCP
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", g["port"]))
        ls.listen(256)
        ls.settimeout(0.5)
        while not stop.is_set():
            try:
                c, _ = ls.accept()
            except socket.timeout:
                continue
            c.settimeout(None)
            threading.Thread(target=conn, args=(c,), daemon=True).start()

    def udp_sink(port: int) -> None:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("0.0.0.0", port))
        u.settimeout(0.5)
        while not stop.is_set():
            try:
                u.recv(65536)
            except socket.timeout:
                pass

    for g in plan["groups"]:
        threading.Thread(target=listener, args=(g,), daemon=True).start()
    for port in sorted({b["port"] for b in plan["background"]}):
        threading.Thread(target=udp_sink, args=(port,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("ready", flush=True)
    t0, dt = plan["t0"], plan["sample_s"]
    end = t0 + plan["duration_s"] + 0.5
    with open(plan["receiver_csv"], "w") as out:
        out.write("t,group,flow,bytes\n")
        nxt = max(time.monotonic(), t0)
        while time.monotonic() < end and not stop.is_set():
            _sleep_until(nxt, stop)
            nxt += dt
            now = time.monotonic()
            for (gi, k), n in list(counts.items()):
                out.write(f"{now:.6f},{gi},{k},{n}\n")
            out.flush()
    stop.set()


def main(argv: list[str]) -> None:
    _pdeathsig()
    cmd, path = argv[0], argv[1]
    with open(path) as f:
        plan = json.load(f)
    {"send": send, "recv": recv}[cmd](plan)


if __name__ == "__main__":
    main(sys.argv[1:])
