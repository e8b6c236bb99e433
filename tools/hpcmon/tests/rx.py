# SPDX-License-Identifier: GPL-2.0
"""hpcd's side of libhpcmon's socket for the tests: the record layout and a receiver."""
import json
import os
import select
import socket
import struct
import threading

# struct hpcmon_record (tools/common/hpcmon_proto.h), native layout, 72 bytes
REC = struct.Struct("=IHHiiiIQQQQQII")
FIELDS = ("magic", "version", "kind", "pid", "rank", "size", "job", "iteration", "run_ns",
          "wait_ns", "end_ns", "cpu_ns", "phases", "reserved")
MAGIC, VERSION, ITERATION, HELLO, BYE = 0x48504331, 3, 1, 2, 3


def record(kind, pid, rank, size, job, it=0, run=0, wait=0, end=0, cpu=0, phases=1):
    """One record as libhpcmon sends it (run, wait, end, cpu in ns)."""
    return REC.pack(MAGIC, VERSION, kind, pid, rank, size, job, it, run, wait, end, cpu, phases, 0)


def monitor(path):
    """A rank's connection to hpcd's monitor socket, as libhpcmon opens it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


class Receiver:
    """hpcd's side of the socket: listening before the job starts, each rank's
    connection drained by a thread."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(path)
        self.sock.listen(512)
        self.conns = []
        self.recs, self.bad = [], 0
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            ready, _, _ = select.select([self.sock] + self.conns, [], [], 0.2)
            for s in ready:
                if s is self.sock:
                    self.conns.append(self.sock.accept()[0])
                    continue
                d = s.recv(4096)
                if not d:
                    self.conns.remove(s)
                    s.close()
                elif len(d) != REC.size:
                    self.bad += 1
                else:
                    self.recs.append(dict(zip(FIELDS, REC.unpack(d))))

    def close(self):
        self.stop = True
        self.t.join()
        for c in self.conns:
            c.close()
        self.sock.close()
        os.unlink(self.path)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as ex:
        return {"error": str(ex)}
