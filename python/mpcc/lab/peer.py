"""Traffic endpoint run inside a network namespace by bench/kernel (stdlib only).

    peer.py srv PORT[:tcp|:mptcp] ...      receive on each port; print {"port": bytes} when all close
    peer.py cli HOST SECS PORT:PROTO:CA ... send to each port for SECS with congestion control CA;
                                           print {"port": bytes_sent, "ss": `ss -tinH` mid-run}
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

IPPROTO_MPTCP = 262
CHUNK = 1 << 20
socket.setdefaulttimeout(120)      # an orphaned peer (its bench was killed) exits by itself


def _proto(name: str) -> int:
    return IPPROTO_MPTCP if name == "mptcp" else socket.IPPROTO_TCP


def serve(specs: list[str]) -> None:
    result, socks = {}, []
    for spec in specs:
        port, proto = (spec.split(":") + ["mptcp"])[:2]
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, _proto(proto))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", int(port)))
        s.listen(1)
        socks.append((int(port), s))

    def run(port, s):
        c, _ = s.accept()
        buf = bytearray(CHUNK)
        n = 0
        while True:
            k = c.recv_into(buf)
            if not k:
                break
            n += k
        result[port] = n
        c.close()

    threads = [threading.Thread(target=run, args=ps) for ps in socks]
    for t in threads:
        t.start()
    print("ready", flush=True)
    for t in threads:
        t.join()
    print(json.dumps(result), flush=True)


def send(host: str, secs: float, specs: list[str]) -> None:
    result = {}
    start = threading.Barrier(len(specs) + 1)

    def run(port, proto, ca):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, _proto(proto))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, ca.encode())
        s.connect((host, port))
        buf = memoryview(bytearray(CHUNK))
        start.wait()
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < secs:
            n += s.send(buf)
        result[port] = n
        s.close()

    threads = []
    for spec in specs:
        port, proto, ca = spec.split(":")
        threads.append(threading.Thread(target=run, args=(int(port), proto, ca)))
    for t in threads:
        t.start()
    start.wait()
    time.sleep(secs * 0.6)
    ss = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True, text=True).stdout
    for t in threads:
        t.join()
    print(json.dumps({"sent": result, "ss": ss}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "srv":
        serve(sys.argv[2:])
    else:
        send(sys.argv[2], float(sys.argv[3]), sys.argv[4:])
