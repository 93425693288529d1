"""lockbench adapter (docs/adapters.md) for `etcdctl lock NAME`.

etcd's lock as people use it from a shell: per lock request it starts

    ETCDCTL --endpoints=LOCKBENCH_ENDPOINTS -w json lock --ttl=LOCKBENCH_TTL LOCKBENCH_LOCK

(ETCDCTL is argv[1]) and holds the lock as long as that process runs.
etcdctl lock (ctlv3/command/lock_command.go, lockUntilSignal) makes a
concurrency.Session with the TTL, takes a concurrency.Mutex on the name,
reads its key back and prints that Get response (with -w json: the key,
its create revision and its lease, which are the grant: nothing else is
read from etcd), then waits for SIGINT or SIGTERM, on which it unlocks
and exits 0, or for its session to end, on which it exits 1 with
"session expired". It ignores its stdin.

So: a grant is the first line etcdctl prints; unlock is Ctrl-C (SIGINT)
and waiting for it to exit; an etcdctl that exits while it holds has lost
the lock ({"event":"lost"}); a lock with a timeout is Ctrl-C at the
timeout, as `timeout -s INT` would do, and so is a cancel (a user giving
up on the wait): etcdctl's Mutex.Lock then deletes its waiting key.

Each etcdctl dies with this process (PR_SET_PDEATHSIG), which dies with
lockbench, and is in lockbench's process group for its kills and pauses.
"""
import base64
import ctypes
import json
import os
import queue
import signal
import subprocess
import sys
import threading

ETCDCTL = sys.argv[1]
ENDPOINTS = os.environ["LOCKBENCH_ENDPOINTS"]
TTL = int(os.environ["LOCKBENCH_TTL"])
NAME = os.environ["LOCKBENCH_LOCK"]

libc = ctypes.CDLL(None, use_errno=True)
out_lock = threading.Lock()


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def error(outcome, err):
    send({"reply": "error", "outcome": outcome, "error": err})


def die_with_parent():
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Etcdctl:
    """One `etcdctl lock` process: its first stdout line, its exit."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [ETCDCTL, "--endpoints=" + ENDPOINTS, "-w", "json", "lock", "--ttl=%d" % TTL, NAME],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=die_with_parent)
        self.lines = queue.Queue()
        self.stderr = b""
        self.held = False  # granted and not being released: its exit is a loss
        self.ended = False  # interrupted and reaped
        self.stderr_reader = threading.Thread(target=self._stderr, daemon=True)
        self.stderr_reader.start()
        threading.Thread(target=self._stdout, daemon=True).start()

    def _stderr(self):
        self.stderr = self.proc.stderr.read()

    def _stdout(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.proc.wait()
        with out_lock:
            if self.held:
                self.held = False
                sys.stdout.write(json.dumps({"event": "lost"}) + "\n")
                sys.stdout.flush()
        self.lines.put(None)

    def why(self):
        return "etcdctl exited %s: %s" % (self.proc.returncode, self.stderr.decode(errors="replace").strip())

    def interrupt(self):
        """Ctrl-C, and wait for the exit; True if etcdctl exited 0."""
        with out_lock:
            self.held = False
        if self.ended:
            return self.proc.returncode == 0
        self.ended = True
        try:
            self.proc.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass
        rc = self.proc.wait()
        while self.lines.get() is not None:
            pass  # the stdout reader's end
        self.stderr_reader.join()
        return rc == 0


# waiting is the line queue of the etcdctl a lock waits on, where the
# stdin reader puts a cancel; None when no lock is in flight.
waiting = None
waiting_lock = threading.Lock()


def lock(req):
    """Starts etcdctl and answers with its grant; returns it if granted."""
    global waiting
    e = Etcdctl()
    with waiting_lock:
        waiting = e.lines
    timeout = req.get("timeout_ms")
    try:
        line = e.lines.get(timeout=None if timeout is None else timeout / 1000.0)
    except queue.Empty:
        line = "timed out"
    finally:
        with waiting_lock:
            waiting = None
    if line in ("timed out", "cancelled"):
        # Ctrl-C. Exit 0: it had got the lock and released it. Killed by the
        # SIGINT itself: it came before etcdctl installed its handler, which
        # it does before Mutex.Lock, so no key was written. Otherwise its
        # Mutex.Lock was cancelled and deleted its waiting key on the way
        # out, but whether that delete went through is not printed.
        released = e.interrupt()
        outcome = "certain" if released or e.proc.returncode == -signal.SIGINT else "unknown"
        error(outcome, "lock: %s, etcdctl interrupted: %s" % (line, e.why()))
        return None
    if line is None:
        # Exited before a grant: its session's lease is no longer kept alive,
        # and a key it may have put expires with it.
        error("unknown", "lock: " + e.why())
        return None
    try:
        kv = json.loads(line)["kvs"][0]
        grant = {"reply": "granted", "token": kv["create_revision"],
                 "key": base64.b64decode(kv["key"]).decode(), "lease": format(kv["lease"], "x")}
    except (ValueError, KeyError, IndexError, TypeError) as err:
        e.interrupt()
        error("unknown", "lock: etcdctl printed %r: %r" % (line, err))
        return None
    with out_lock:
        e.held = True
    send(grant)
    return e


def unlock(e):
    if e is None:
        error("certain", "unlock: not held")
        return
    if e.proc.poll() is not None:
        e.interrupt()
        error("certain", "unlock: etcdctl had already exited, its lease gone: " + e.why())
        return
    if e.interrupt():
        send({"reply": "released"})
    else:
        error("unknown", "unlock: " + e.why())


def read_requests(requests):
    """Reads stdin: a cancel goes to the lock in flight (or nowhere), the
    rest to requests; None at the end."""
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("op") == "cancel":
            with waiting_lock:
                if waiting is not None:
                    waiting.put("cancelled")
            continue
        requests.put(req)
    requests.put(None)


def main():
    held = None
    requests = queue.Queue()
    threading.Thread(target=read_requests, args=(requests,), daemon=True).start()
    send({"event": "ready"})  # start-up is over (each lock still starts an etcdctl)
    for req in iter(requests.get, None):
        op = req.get("op")
        if op == "lock":
            held = lock(req)
        elif op == "unlock":
            unlock(held)
            held = None
        elif op == "close":
            if held is not None:
                held.interrupt()
            send({"reply": "closed"})
            return
        else:
            sys.stderr.write("etcdctl adapter: unknown op %r\n" % op)
            sys.exit(2)


if __name__ == "__main__":
    main()
