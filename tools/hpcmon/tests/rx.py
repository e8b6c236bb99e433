# SPDX-License-Identifier: GPL-2.0
"""hpcd's side of libhpcmon's socket for the tests: the record layout and a receiver."""
import json
import os
import socket
import struct
import threading

# struct hpcmon_record (tools/common/hpcmon_proto.h), native layout, 72 bytes
REC = struct.Struct("=IHHiiiIQQQQQII")
FIELDS = ("magic", "version", "kind", "pid", "rank", "size", "job", "iteration", "run_ns",
          "wait_ns", "end_ns", "cpu_ns", "phases", "reserved")
MAGIC, ITERATION, HELLO, BYE = 0x48504331, 1, 2, 3


class Receiver:
    """hpcd's side of the socket: bound before the job starts, drained by a thread."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.recs, self.bad = [], 0
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            try:
                d = self.sock.recv(4096)
            except socket.timeout:
                continue
            if len(d) != REC.size:
                self.bad += 1
                continue
            self.recs.append(dict(zip(FIELDS, REC.unpack(d))))

    def close(self):
        self.stop = True
        self.t.join()
        self.sock.close()
        os.unlink(self.path)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as ex:
        return {"error": str(ex)}
