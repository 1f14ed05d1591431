#!/usr/bin/env python3
"""A fixed delay between two Ethernet interfaces, in user space.

The kernels these tests run on have no sch_netem, so the delayed path of the cold-start bench
(delayed-path.mjs) is a "router" namespace running this: every frame that arrives on one
interface (an AF_PACKET raw socket) is sent out of the other one DELAY ms after the kernel
received it. Each direction is a FIFO, so frames are never reordered; nothing is lost,
duplicated or rate-limited.

usage: delay_bridge.py IFACE_A IFACE_B        (in the namespace holding both, as root)

Commands on stdin, one per line:
  delay MS   frames received from now on wait MS ms (each way)
  stats      print one JSON line: per delay, frames forwarded and how late they left
EOF on stdin ends it (so it never outlives the process that started it).
Prints `ready` once both sockets are bound.

Why Python: the standard library has AF_PACKET sockets, so this needs no build step and no
`unsafe` (which the workspace forbids). Precision: a frame's delay counts from the kernel's
receive timestamp (SO_TIMESTAMPNS), so a late wake-up on receive costs nothing; frames leave
from a select() timeout (microsecond resolution, timer slack set to 1 ns) in a SCHED_FIFO
process, and how late each left is recorded and reported by `stats`.
"""

import ctypes
import json
import os
import select
import socket
import struct
import sys
import time
from collections import deque

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4  # sll_pkttype of a frame this host sent (our own sends among them)
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
PR_SET_TIMERSLACK = 29


def open_iface(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((name, ETH_P_ALL))
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass  # older kernels: the pkttype check below does it
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setblocking(False)
    return s


def percentile(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def main():
    a_name, b_name = sys.argv[1], sys.argv[2]
    # The kernel's default 50 us of timer slack would be added to every frame's wait.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except OSError:
        pass
    # Real-time priority: on a machine busy with builds, an ordinary process waits for a core
    # for milliseconds at a time, and so would every frame. It sleeps between frames and
    # handles a few thousand per bench, so it takes little from anyone.
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (OSError, AttributeError):
        print("delay_bridge: no SCHED_FIFO; frames may leave late", file=sys.stderr)
    a, b = open_iface(a_name), open_iface(b_name)
    out = {a: b, b: a}
    queue = {a: deque(), b: deque()}  # frames received on the key: (due_ns, frame, delay_ms)
    delay_ms = 0.0
    # Per delay setting: how late frames left (ns), frames too big to send.
    late = {}
    dropped = {}
    stdin = sys.stdin.buffer.raw
    pending = b""
    print("ready", flush=True)
    while True:
        heads = [q[0][0] for q in queue.values() if q]
        timeout = None
        if heads:
            timeout = max(0.0, (min(heads) - time.monotonic_ns()) / 1e9)
        readable, _, _ = select.select([a, b, stdin], [], [], timeout)
        for s in readable:
            if s is stdin:
                chunk = os.read(stdin.fileno(), 4096)
                if not chunk:
                    return
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    words = line.decode().split()
                    if words[:1] == ["delay"]:
                        delay_ms = float(words[1])
                    elif words[:1] == ["stats"]:
                        report = {}
                        for d, values in late.items():
                            report[str(d)] = {
                                "frames": len(values),
                                "late_p50_us": percentile(values, 0.5) / 1e3,
                                "late_p99_us": percentile(values, 0.99) / 1e3,
                                "late_max_us": max(values) / 1e3,
                                "dropped": dropped.get(d, 0),
                            }
                        print(json.dumps(report), flush=True)
                continue
            q = queue[s]
            while True:
                try:
                    frame, anc, _, addr = s.recvmsg(65536, 64)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                # The kernel's receive time (CLOCK_REALTIME), turned into an age, so the
                # wait counts from arrival, not from this wake-up.
                age = 0
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", data[:16])
                        age = max(0, time.time_ns() - (sec * 1_000_000_000 + nsec))
                due = time.monotonic_ns() - age + int(delay_ms * 1e6)
                # FIFO: a shorter delay set mid-flight never overtakes earlier frames.
                if q and q[-1][0] > due:
                    due = q[-1][0]
                q.append((due, frame, delay_ms))
        now = time.monotonic_ns()
        for s, q in queue.items():
            while q and q[0][0] <= now:
                due, frame, d = q.popleft()
                try:
                    out[s].send(frame)
                    late.setdefault(d, []).append(time.monotonic_ns() - due)
                except OSError:
                    # EMSGSIZE: a frame above the MTU (offloads left on); counted, not hidden.
                    dropped[d] = dropped.get(d, 0) + 1
                now = time.monotonic_ns()


if __name__ == "__main__":
    main()
