"""lockbench adapter (docs/adapters.md) for kazoo's Lock (Debian's
python3-kazoo 2.8.0).

It uses the lock the way kazoo's documentation shows it:
KazooClient(hosts=..., timeout=...), start(), one client.Lock(path,
identifier), reused; acquire(timeout=...) for a lock with timeout_ms,
acquire() otherwise; release(); cancel() to give up a wait; and a state
listener (add_listener) watching KazooState.SUSPENDED and LOST, which the
lock recipe's "Error Handling" note highly recommends.

How it answers the protocol:

- The grant: acquire() returns True; the node it holds is lock.node (its
  name under the lock's path). The adapter reads its ZnodeStat
  (client.exists) and answers with its path as the key, its czxid as the
  token and its ephemeral owner (this client's session) in hex as the
  lease. A node gone or not this session's (the session expired as
  acquire returned) is released and answered as an error.
- A lock runs in a thread while the main thread reads stdin: cancel calls
  lock.cancel(), which wakes the wait; acquire then raises CancelledError
  after deleting its node (best effort). Every failed acquire is certain
  only if no node of this session is left under the lock (read back).
- A grant whose loss was reported and that lockbench never unlocked is
  released before the next acquire, as leaving the caller's `with lock:`
  block would: kazoo's Lock is not re-entrant, and an acquire while
  lock.is_acquired would wait forever.
- close stops the client: its session ends, and ZooKeeper deletes the
  session's nodes.
"""
import json
import os
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState

HOSTS = os.environ["LOCKBENCH_ENDPOINTS"]
TTL = int(os.environ["LOCKBENCH_TTL"])
PATH = os.environ["LOCKBENCH_LOCK"]
CLIENT = os.environ.get("LOCKBENCH_CLIENT", "")

# out guards stdout and the state below it: a lost event and a reply never
# interleave, and a cancel acts only on a lock in flight.
out = threading.Lock()
st = {
    "held": False,  # a grant is out, and no loss was reported for it
    "state": KazooState.CONNECTED,
    "in_flight": False,  # a lock request is not answered yet
    "cancelled": False,  # a cancel came for it
    "acquiring": False,  # the lock thread is in acquire: cancel() reaches it
}


def write(msg):
    """Prints one line; out held."""
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def reply(msg):
    with out:
        write(msg)


def error(outcome, err):
    return {"reply": "error", "outcome": outcome, "error": err}


def listener(state):
    # kazoo's docs (the lock recipe's "Error Handling"): "In the event that
    # a LOST state occurs, its certain that the lock and/or the lease has
    # been lost"; SUSPENDED is a lost connection, after which the lock may
    # or may not be ours. Only LOST is a certain loss, but a holder that
    # cannot be certain must stop acting on the lock, so both end the grant
    # (the first to come).
    with out:
        st["state"] = state
        if st["held"] and state in (KazooState.SUSPENDED, KazooState.LOST):
            st["held"] = False
            write({"event": "lost"})


client = KazooClient(hosts=HOSTS, timeout=float(TTL))
client.add_listener(listener)
client.start()
lock = client.Lock(PATH, "lockbench client " + CLIENT)
owned = False  # acquired and not released: lost or not


def session():
    cid = client.client_id
    return cid[0] if cid else None


def failed(why):
    """Answers a failed acquire: certain only if no node of this session is
    left under the lock (kazoo's clean-up is best effort)."""
    try:
        sid = session()
        if sid is None:
            reply(error("unknown", why + "; not connected: could not look for a node left"))
            return
        for child in client.get_children(PATH):
            stat = client.exists(PATH + "/" + child)
            if stat is not None and stat.ephemeralOwner == sid:
                reply(error("unknown", why + "; a node of this session is left: " + child))
                return
    except NoNodeError:
        pass  # the lock's node does not exist: nothing of ours under it
    except Exception as e:
        reply(error("unknown", "%s; could not look for a node left: %r" % (why, e)))
        return
    reply(error("certain", why))


def give_back(why):
    """Releases a grant the adapter cannot report, and answers with an
    error: certain once the release went through."""
    global owned
    owned = False
    try:
        lock.release()
    except Exception as e:
        reply(error("unknown", "%s; release: %r" % (why, e)))
        return
    reply(error("certain", why + "; released"))


def do_lock(timeout_ms):
    global owned
    if owned:
        # A grant lost and never unlocked: released as leaving the caller's
        # `with lock:` block would (it deletes only the lock's own node).
        owned = False
        try:
            lock.release()
        except Exception as e:
            sys.stderr.write("kazoo adapter: release of the lost grant: %r\n" % e)
    with out:
        if st["cancelled"]:  # before acquire: nothing asked of ZooKeeper
            st["in_flight"] = False
            write(error("certain", "cancelled before acquire"))
            return
        st["acquiring"] = True
    ok, err = False, None
    try:
        if timeout_ms is None:
            ok = lock.acquire()
        else:
            ok = lock.acquire(timeout=timeout_ms / 1000.0)
    except Exception as e:
        err = e
    with out:
        st["acquiring"] = st["in_flight"] = False
    # (After a cancel, lockbench says so before these messages.)
    if err is not None:
        failed("acquire: " + type(err).__name__ + (": %s" % err if str(err) else ""))
        return
    if not ok:
        failed("acquire: not acquired within %s ms" % timeout_ms)
        return
    owned = True
    node = PATH + "/" + lock.node
    try:
        sid = session()
        stat = client.exists(node)
    except Exception as e:
        give_back("acquired, but the holder's node could not be read: %r" % e)
        return
    if stat is None or sid is None or stat.ephemeralOwner != sid:
        give_back("acquired, but its node %s is gone or not this session's" % node)
        return
    with out:
        write({"reply": "granted", "token": stat.czxid, "key": node, "lease": format(sid, "x")})
        st["held"] = True
        if st["state"] in (KazooState.SUSPENDED, KazooState.LOST):
            st["held"] = False  # the connection went before the grant was out
            write({"event": "lost"})


def do_unlock():
    global owned
    with out:
        st["held"] = False
    if not owned:
        reply(error("certain", "unlock: not held"))
        return
    owned = False
    try:
        lock.release()
    except Exception as e:
        reply(error("unknown", "release: %r" % e))
        return
    reply({"reply": "released"})


def main():
    reply({"event": "ready"})  # kazoo is loaded and the session is open
    worker = None
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        if op == "cancel":
            with out:
                if st["in_flight"]:  # else ignored, as the protocol says
                    st["cancelled"] = True
                    if st["acquiring"]:
                        lock.cancel()
            continue
        if worker is not None:
            worker.join()  # it answered: the thread is ending
            worker = None
        if op == "lock":
            with out:
                st["in_flight"], st["cancelled"] = True, False
            worker = threading.Thread(target=do_lock, args=(req.get("timeout_ms"),), daemon=True)
            worker.start()
        elif op == "unlock":
            do_unlock()
        elif op == "close":
            with out:
                st["held"] = False
            client.stop()  # the session's nodes go with it
            client.close()
            reply({"reply": "closed"})
            return
        else:
            sys.stderr.write("kazoo adapter: unknown op %r\n" % op)
            sys.exit(2)
    client.stop()  # stdin closed: lockbench is gone


if __name__ == "__main__":
    main()
