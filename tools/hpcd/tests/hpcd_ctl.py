"""hpcd's sockets for the integration tests' Python helpers: the control
socket, and the monitor socket as libhpcmon feeds it (record(), monitor():
tools/hpcmon/tests/rx.py, the record layout's one copy in the tests)."""
import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hpcmon",
                                "tests"))
from rx import HELLO, ITERATION, monitor, record  # noqa: E402,F401


def connect(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    return c, c.makefile("r")


def watch_and_add(path, pid, name):
    """A watcher (hpcd's acknowledgement read), then `pid` added as `name`:
    (the watcher's socket, its line reader, hpcd's reply to the add)."""
    w, wf = connect(path)
    w.sendall(b'{"cmd":"watch"}\n')
    wf.readline()
    c, cf = connect(path)
    c.sendall(json.dumps({"cmd": "add", "pid": pid, "name": name}).encode() + b"\n")
    return w, wf, cf.readline().strip()
