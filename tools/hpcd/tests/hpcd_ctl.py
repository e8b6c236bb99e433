"""hpcd's control socket for the integration tests' Python helpers."""
import json
import socket


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
