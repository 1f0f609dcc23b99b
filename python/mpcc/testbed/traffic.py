"""Traffic inside the testbed namespaces: bulk senders (client) and byte-counting receivers
(server), plus the per-subflow sampler. Run by the testbed as

    ip netns exec <client-ns> python -m mpcc.testbed.traffic send PLAN.json
    ip netns exec <server-ns> python -m mpcc.testbed.traffic recv PLAN.json

Multipath groups use kernel MPTCP sockets (IPPROTO_MPTCP = 262); the congestion control is
set with setsockopt(TCP_CONGESTION) on the MPTCP socket, which upstream MPTCP applies to every
subflow. Single-path groups are plain TCP bound to their path's address.

Samples (CSV, CLOCK_MONOTONIC seconds, the clock linkem also uses):
  sender   t,group,flow,local,route,cwnd,srtt_us,bytes_acked,ssthresh,total_retrans,unacked,busy_us,
           rwnd_limited_us,sndbuf_limited_us,notsent  (notsent: bytes queued on the subflow, not yet sent)
  receiver t,group,flow,bytes
  msk      t,group,flow,outq,notsent,sndbuf,snd_wnd,bytes_retrans,sub_notsent  (multipath flows: the
           MPTCP connection level — SIOCOUTQ / SIOCOUTQNSD of the MPTCP socket, its SO_SNDBUF, the
           peer's advertised connection-level window as the subflows see it, MPTCP_INFO
           bytes_retrans, and the bytes queued on the subflows but not yet sent, Σ tcpi_notsent_bytes)
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import errno
import fcntl
import json
import math
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


# --- connection set-up -----------------------------------------------------------------------
#: Connection set-up before the run's clock starts (the simulator has no handshake: its flows
#: send from start_s). Every connection and every MPTCP subflow is established on the idle
#: network and confirmed, then held until all are; t0 = all ready + T0_MARGIN_S.
CONNECT_PARALLEL = 16    # handshakes (SYN, MP_JOINs) in progress at once
CONNECT_GAP_S = 0.005    # between two connection starts: a 16-SYN burst fits a 20-packet buffer
CONNECT_TIMEOUT_S = 4.0  # one attempt's connect(): covers the kernel's SYN retransmits at 1 s and 3 s
JOIN_TIMEOUT_S = 4.0     # one attempt's wait for every route's subflow (MP_JOIN SYN retransmits alike)
CONNECT_ATTEMPTS = 4     # per connection; between them a back-off of BACKOFF_S · 2^attempt (+ jitter)
BACKOFF_S = 0.25
T0_MARGIN_S = 0.3        # from "all ready" to t0: every flow thread wakes before its start
TCP_ESTABLISHED = 1


def connect_budget_s(n_flows: int) -> float:
    """Upper bound of the set-up phase's length for ``n_flows`` connections (the engine's wait)."""
    per_flow = CONNECT_ATTEMPTS * (CONNECT_TIMEOUT_S + JOIN_TIMEOUT_S) + BACKOFF_S * 2 ** CONNECT_ATTEMPTS
    return per_flow + n_flows * CONNECT_GAP_S * CONNECT_ATTEMPTS + n_flows / CONNECT_PARALLEL * 2.0 + 5.0


def joined_routes(s: socket.socket, routes: dict[str, int], multipath: bool) -> set[int]:
    """Routes (by index) on which connection ``s`` has an ESTABLISHED subflow."""
    subs = mptcp_subflows(s.fileno()) if multipath else tcp_subflow(s)
    return {routes[local] for local, i in subs if local in routes and i["state"] == TCP_ESTABLISHED}


class Pacer:
    """At most CONNECT_PARALLEL set-ups in flight, starts at least CONNECT_GAP_S apart."""

    def __init__(self) -> None:
        self.sem = threading.Semaphore(CONNECT_PARALLEL)
        self.lock = threading.Lock()
        self.next = 0.0

    def slot(self) -> None:
        with self.lock:
            t = max(time.monotonic(), self.next)
            self.next = t + CONNECT_GAP_S
        d = t - time.monotonic()
        if d > 0:
            time.sleep(d)


def establish(g: dict, k: int, pacer: Pacer, log, rng: random.Random) -> tuple[socket.socket | None, dict]:
    """Connect flow ``k`` of group ``g`` and wait until every route has its subflow. A failed
    attempt (connect error, no subflow list, a route that did not join in JOIN_TIMEOUT_S) closes
    the socket and tries again after a back-off. Returns the socket (None if the connection never
    came up) and its record: attempts, the reason of each failed attempt, routes joined."""
    n_routes = len(g["routes"])
    rec = {"group": g["name"], "flow": k, "attempts": 0, "failures": [], "routes": n_routes, "joined": 0}
    best: tuple[socket.socket | None, set[int]] = (None, set())
    for attempt in range(CONNECT_ATTEMPTS):
        if attempt:
            time.sleep(BACKOFF_S * 2 ** (attempt - 1) * (1 + rng.random()))
        rec["attempts"] = attempt + 1
        s = None
        with pacer.sem:
            pacer.slot()
            try:
                proto = IPPROTO_MPTCP if g["multipath"] else socket.IPPROTO_TCP
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
                s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, g["cc"].encode())
                if g.get("bind_addr"):
                    s.bind((g["bind_addr"], 0))
                s.settimeout(CONNECT_TIMEOUT_S)
                s.connect((g["server_addr"], g["port"]))
                # 8 bytes name the flow to the receiver; for MPTCP they also complete the
                # connection (fully established), after which the path manager adds the subflows
                s.sendall(HEADER.pack(g["index"], k))
                deadline = time.monotonic() + JOIN_TIMEOUT_S
                joined: set[int] = set()
                while time.monotonic() < deadline:
                    joined = joined_routes(s, g["routes"], g["multipath"])
                    if len(joined) == n_routes:
                        break
                    time.sleep(0.02)
            except OSError as e:
                first = {j: a for a, j in g["routes"].items()}.get(0)   # the initial subflow's route
                why = (f"connect on route 0 ({first}): "
                       + (f"errno {e.errno} ({errno.errorcode.get(e.errno, '?')}): {e.strerror or e}" if e.errno
                          else f"{e} (no answer in {CONNECT_TIMEOUT_S:g} s)" if isinstance(e, socket.timeout)
                          else str(e)))
                rec["failures"].append(why)
                print(f"group {g['name']} flow {k} attempt {attempt + 1}: {why}", file=log, flush=True)
                if s is not None:
                    s.close()
                continue
        if len(joined) == n_routes:
            if best[0] is not None:
                best[0].close()
            rec["joined"] = n_routes
            return s, rec
        missing = sorted(set(range(n_routes)) - joined)
        addr = {j: a for a, j in g["routes"].items()}
        why = (f"subflow of route {', '.join(f'{j} ({addr.get(j)})' for j in missing)} not established in "
               f"{JOIN_TIMEOUT_S:g} s ({len(joined)} of {n_routes} routes joined"
               + ("; no MPTCP subflow list: fell back to TCP?" if g["multipath"] and not joined else "") + ")")
        rec["failures"].append(why)
        print(f"group {g['name']} flow {k} attempt {attempt + 1}: {why}", file=log, flush=True)
        if joined and len(joined) > len(best[1]):     # keep the best partial connection as a last resort
            if best[0] is not None:
                best[0].close()
            best = (s, joined)
        else:
            s.close()
    rec["joined"] = len(best[1])
    return best[0], rec


# --- sender --------------------------------------------------------------------------------------
#: the longest a write waits for send-buffer room before the sender checks its stop time
SEND_WAIT_S = 0.2


def blocking_writer(s: socket.socket, wait_s: float) -> None:
    """Make ``s`` a blocking writer whose wait the kernel bounds (SO_SNDTIMEO), as a bulk
    sender (iperf3, a blocking ``write``) is: ``sendmsg`` copies while the send buffer has room
    (``sk_stream_memory_free``) and sleeps in ``sk_stream_wait_memory`` until a third of it is
    free. Python's own timeout (``settimeout``) would poll for POLLOUT before every write, which
    is ``sk_stream_is_writeable`` (free ≥ queued / 2): the writer would then stop at two thirds
    of the buffer, and the MPTCP connection would run with a third less send buffer than Linux
    gives a bulk sender."""
    s.settimeout(None)
    sec = int(wait_s)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", sec, int((wait_s - sec) * 1e6)))


def reset_on_close(s: socket.socket) -> None:
    """SO_LINGER {1, 0}: ``s``'s close() (explicit, or at exit) sends a reset and discards what
    it has not delivered (``tcp_disconnect``; on an MPTCP socket ``mptcp_close`` sends
    MP_FASTCLOSE and resets every subflow). A kernel that refuses the option keeps the plain
    close()."""
    with contextlib.suppress(OSError):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def abort(s: socket.socket) -> None:
    """Close ``s`` with a reset (:func:`reset_on_close`). A flow's traffic ends at its group's
    stop time: a plain close() would leave an orphan that drains a send buffer of up to
    megabytes, through later groups' measurements and, after a retransmission timeout, through
    the next run's emulator."""
    reset_on_close(s)
    s.close()


def send(plan: dict) -> None:
    """Set up every connection (see :func:`establish`), then report ``t0 <monotonic>`` on stdout
    and run the traffic on that clock: group g sends in [t0 + start_s, t0 + stop_s]. A
    connection that never came up ends the set-up with one line on stderr and exit 3; a subflow
    that never joined is recorded (connect.json) and the flow runs on the routes it has."""
    stop = threading.Event()
    go = threading.Event()
    clock = {"t0": math.inf}
    socks: dict[tuple[int, int], socket.socket] = {}
    lock = threading.Lock()
    errors: list[str] = []
    records: list[dict] = []
    pacer = Pacer()
    log = sys.stderr

    def flow(g: dict, k: int) -> None:
        enter_netns(g.get("netns"))
        rng = random.Random(g["index"] * 100003 + k)
        s, rec = establish(g, k, pacer, log, rng)
        with lock:
            records.append(rec)
        if s is None:
            return
        with lock:
            socks[(g["index"], k)] = s
        go.wait()
        t0 = clock["t0"]
        offsets = g.get("start_offsets") or [0.0] * g["count"]
        if _sleep_until(t0 + g["start_s"] + offsets[k], stop):
            buf = bytes(65536)
            blocking_writer(s, SEND_WAIT_S)
            end = t0 + g["stop_s"]
            while time.monotonic() < end and not stop.is_set():
                try:
                    s.send(buf)
                except (BlockingIOError, socket.timeout):
                    pass
                except OSError as e:
                    errors.append(f"group {g['name']} flow {k}: {e}")
                    break
        with lock:
            socks.pop((g["index"], k), None)
        abort(s)

    threads = [threading.Thread(target=flow, args=(g, k), daemon=True)
               for g in plan["groups"] for k in range(g["count"])]
    t_setup = time.monotonic()
    for th in threads:
        th.start()
    deadline = t_setup + connect_budget_s(len(threads))
    while time.monotonic() < deadline:
        with lock:
            if len(records) == len(threads):
                break
        time.sleep(0.01)
    with lock:
        recs = sorted(records, key=lambda r: (r["group"], r["flow"]))
    done = {(r["group"], r["flow"]) for r in recs}
    lost = [r for r in recs if r["joined"] == 0]
    unfinished = [(g["name"], k) for g in plan["groups"] for k in range(g["count"]) if (g["name"], k) not in done]
    summary = {"setup_s": time.monotonic() - t_setup, "flows": recs,
               "retries": sum(r["attempts"] - 1 for r in recs),
               "subflows_not_joined": sum(r["routes"] - r["joined"] for r in recs if r["joined"] > 0)}
    if lost or unfinished:
        _write_json(plan.get("connect_json"), summary)
        if lost:
            r = lost[0]
            print(f"group {r['group']} flow {r['flow']} could not connect in {r['attempts']} attempts "
                  f"({len(lost)} of {len(threads)} flows failed): {r['failures'][-1]}", file=log, flush=True)
        else:
            gname, k = unfinished[0]
            print(f"group {gname} flow {k}: connection set-up still running after {deadline - t_setup:.0f} s "
                  f"({len(unfinished)} of {len(threads)} flows unfinished)", file=log, flush=True)
        sys.exit(3)
    t0 = time.monotonic() + T0_MARGIN_S
    summary["t0"] = t0
    _write_json(plan.get("connect_json"), summary)
    clock["t0"] = t0
    print(f"t0 {t0:.6f}", flush=True)
    go.set()
    bg = [threading.Thread(target=background, args=(b, t0, stop), daemon=True) for b in plan["background"]]
    for th in bg:
        th.start()
    threads += bg
    routes = {g["index"]: g["routes"] for g in plan["groups"]}
    mp = {g["index"]: g["multipath"] for g in plan["groups"]}
    end = t0 + plan["duration_s"]
    dt = plan["sample_s"]
    msk_path = plan.get("msk_csv") or os.devnull
    with open(plan["sender_csv"], "w") as out, open(msk_path, "w") as msk:
        out.write("t,group,flow,local,route,cwnd,srtt_us,bytes_acked,ssthresh,total_retrans,unacked,busy_us,"
                  "rwnd_limited_us,sndbuf_limited_us,notsent\n")
        msk.write("t,group,flow,outq,notsent,sndbuf,snd_wnd,bytes_retrans,sub_notsent\n")
        nxt = t0
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
                              f"{i['busy_us']},{i['rwnd_limited_us']},{i['sndbuf_limited_us']},"
                              f"{i['notsent_bytes']}\n")
            out.flush()
            msk.flush()
    stop.set()
    for th in threads:
        th.join(timeout=2)
    with lock:
        left = list(socks.values())
    for s in left:   # a flow still blocked in send(): its close at exit resets too
        reset_on_close(s)
    if errors:
        print("\n".join(sorted(set(errors))[:10]), file=sys.stderr)
        sys.exit(3)


def _write_json(path: str | None, obj: dict) -> None:
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


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
    # samples from the start (connections set up before t0 count 0 bytes) until SIGTERM; max_s
    # bounds a receiver whose testbed vanished
    dt = plan["sample_s"]
    end = time.monotonic() + plan["max_s"]
    with open(plan["receiver_csv"], "w") as out:
        out.write("t,group,flow,bytes\n")
        nxt = time.monotonic()
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
