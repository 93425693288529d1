// lockbench adapter (docs/adapters.md) for the Node etcd3 client's Lock
// (npm etcd3, pinned in package.json; `make adapter-deps` installs it
// into node_modules beside this file).
//
// It uses the library's lock the way its documentation shows:
// new Etcd3({hosts}), client.lock(name).ttl(seconds), acquire(),
// release(). lock.js in the package is all there is to it:
//
// - acquire() is a try-lock: it grants a lease, then one txn puts the key
//   with that lease if the key does not exist (Create == 0); if the key
//   exists it revokes the lease and throws EtcdLockFailedError. It never
//   waits, so a held lock answers "error", outcome certain, at once, and
//   lockbench's worker retries after its back-off.
// - the lease is kept alive by the library's Lease (every TTL/3), and the
//   Lock does not say when it is lost: no "lost" event is sent.
// - release() revokes the lease, so it deletes only the key on it.
// - acquire() cannot be interrupted: a cancel (or a timeout_ms that
//   passes) is answered once it settles, and a lock it took then, or a
//   failure other than EtcdLockFailedError, is released as lock.do()
//   does, which makes the outcome certain once the revoke is confirmed.
//
// Two things are lockbench's: the key is LOCKBENCH_LOCK (the client's
// namespace is empty, so the name is the key), and after acquire() the
// key is read back for its create revision, the fencing token the
// protocol asks for (the library does not return it).
'use strict';
const readline = require('readline');
const { Etcd3, EtcdLockFailedError } = require('etcd3');

const key = process.env.LOCKBENCH_LOCK;
const ttl = parseInt(process.env.LOCKBENCH_TTL, 10);
const client = new Etcd3({ hosts: process.env.LOCKBENCH_ENDPOINTS.split(',') });

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

function error(outcome, err) {
  send({ reply: 'error', outcome, error: String(err && err.stack ? err.message : err) });
}

// cancelled is set by a cancel request while a lock is in flight (the
// library's acquire cannot be interrupted: its answer is awaited).
let inFlight = false;
let cancelled = false;
let held = null;

// settle gives up a lock acquire() may have taken, as the library's own
// lock.do() does after a failure: release() revokes the lease, and with
// it any key on it. Certain once the revoke is confirmed.
async function settle(l, why) {
  try {
    await l.release();
  } catch (e) {
    error('unknown', why + '; revoke: ' + e.message);
    return;
  }
  error('certain', why + '; its lease revoked');
}

async function lock(req) {
  const l = client.lock(key).ttl(ttl);
  const deadline = req.timeout_ms ? Date.now() + req.timeout_ms : Infinity;
  let err = null;
  inFlight = true;
  cancelled = false;
  try {
    await l.acquire();
  } catch (e) {
    err = e;
  }
  inFlight = false;
  if (err instanceof EtcdLockFailedError) {
    // The txn found the key and the library revoked its lease.
    error('certain', err);
    return;
  }
  if (err) {
    await settle(l, 'acquire: ' + err.message);
    return;
  }
  if (cancelled || Date.now() > deadline) {
    await settle(l, cancelled ? 'cancelled: acquired, and released' : 'timed out: acquired late, and released');
    return;
  }
  let kv;
  try {
    const res = await client.get(key).exec();
    kv = res.kvs[0];
  } catch (e) {
    await settle(l, 'read the lock key: ' + e.message);
    return;
  }
  const lease = await l.leaseId();
  if (!kv || kv.lease !== lease) {
    await settle(l, 'acquired, but the key was gone at once');
    return;
  }
  held = l;
  send({ reply: 'granted', token: Number(kv.create_revision), key, lease: BigInt(lease).toString(16) });
}

async function unlock() {
  if (!held) {
    error('certain', 'unlock: not held');
    return;
  }
  const l = held;
  held = null;
  try {
    await l.release();
  } catch (e) {
    error('unknown', 'release: ' + e.message);
    return;
  }
  send({ reply: 'released' });
}

async function handle(req) {
  switch (req.op) {
    case 'lock':
      await lock(req);
      break;
    case 'unlock':
      await unlock();
      break;
    case 'close':
      if (held) {
        await held.release().catch(() => undefined); // else it expires within its TTL
      }
      client.close();
      send({ reply: 'closed' });
      process.exit(0);
      break;
    default:
      process.stderr.write('node-etcd3 adapter: unknown op ' + req.op + '\n');
      process.exit(2);
  }
}

// Requests run one after the other; a cancel acts on the lock in flight
// at once (and on nothing when none is).
let chain = Promise.resolve();
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', line => {
  const req = JSON.parse(line);
  if (req.op === 'cancel') {
    cancelled = inFlight;
    return;
  }
  chain = chain.then(() => handle(req));
});
lines.on('close', () => chain.then(() => process.exit(0)));
// Start-up is over once the library is loaded and has a connection: the
// first call of a process dials (a second or more on a loaded machine),
// which a long-running program does once, not per lock.
client
  .get(key)
  .exec()
  .catch(() => undefined)
  .then(() => send({ event: 'ready' }));
