"""lockbench adapter (docs/adapters.md) for python-etcd3's Lock.

It uses the library's lock the way its documentation shows:
etcd3.client(host, port), client.lock(name, ttl), acquire(timeout),
release(), is_acquired(). Two things are lockbench's, not the library's:

- the lock's key is set to LOCKBENCH_LOCK (the library puts it under
  /locks/NAME, outside the run's namespace);
- while it holds, a thread asks is_acquired() every TTL/10 and reports
  {"event": "lost"} once it is False: the library gives no other notice.

python-etcd3's Lock does NOT refresh its lease by itself (the caller must
call lock.refresh()); this adapter does not either, on purpose: that is
the library's documented behaviour, and what lockbench judges. A holder
that holds past its TTL loses the lock without being told, until the next
is_acquired() poll.

python-etcd3 dials one endpoint: the first of LOCKBENCH_ENDPOINTS.
"""
import json
import os
import sys
import threading
from urllib.parse import urlparse

import etcd3

out_lock = threading.Lock()


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def error(outcome, err):
    send({"reply": "error", "outcome": outcome, "error": err})


class Watcher(threading.Thread):
    """Polls is_acquired() while a grant is held; reports its loss once."""

    def __init__(self, lock, every):
        super().__init__(daemon=True)
        self.lock, self.every = lock, every
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(self.every):
            try:
                held = self.lock.is_acquired()
            except Exception:
                continue  # unknown: ask again
            if not held:
                with out_lock:
                    if self.done.is_set():
                        return
                    self.done.set()
                    sys.stdout.write(json.dumps({"event": "lost"}) + "\n")
                    sys.stdout.flush()
                return

    def stop(self):
        with out_lock:
            self.done.set()


def main():
    ep = urlparse(os.environ["LOCKBENCH_ENDPOINTS"].split(",")[0])
    ttl = int(os.environ["LOCKBENCH_TTL"])
    key = os.environ["LOCKBENCH_LOCK"]
    client = etcd3.client(host=ep.hostname, port=ep.port)
    lock = client.lock(key.rsplit("/", 1)[-1], ttl=ttl)
    lock.key = key
    send({"event": "ready"})  # the library is loaded: start-up is over
    watcher = None
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        if op == "lock":
            timeout = req.get("timeout_ms")
            try:
                ok = lock.acquire(timeout=None if timeout is None else timeout / 1000.0)
            except Exception as e:  # a txn may have been applied
                error("unknown", "acquire: %r" % e)
                continue
            if not ok:
                # acquire gave up after a failed attempt: no key of ours.
                error("certain", "acquire: timed out")
                continue
            # The token is the key's create revision, read back.
            try:
                value, meta = client.get(lock.key)
            except Exception as e:
                error("unknown", "read the lock key: %r" % e)
                continue
            if value != lock.uuid:
                error("certain", "acquired, but the key was gone at once")
                continue
            send({"reply": "granted", "token": meta.create_revision, "key": lock.key,
                  "lease": format(lock.lease.id, "x")})
            watcher = Watcher(lock, max(ttl / 10.0, 0.1))
            watcher.start()
        elif op == "unlock":
            if watcher is not None:
                watcher.stop()
                watcher = None
            try:
                released = lock.release()
            except Exception as e:
                error("unknown", "release: %r" % e)
                continue
            if released:
                send({"reply": "released"})
            else:
                error("certain", "release: the key is not ours any more")
        elif op == "close":
            if watcher is not None:
                watcher.stop()
            if lock.lease is not None:
                try:
                    lock.lease.revoke()
                except Exception:
                    pass  # it expires within its TTL
            send({"reply": "closed"})
            return
        else:
            sys.stderr.write("python-etcd3 adapter: unknown op %r\n" % op)
            sys.exit(2)


if __name__ == "__main__":
    main()
