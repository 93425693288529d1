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

class Timeout extends Error {}

// acquire is lock.acquire(), bounded by timeoutMs when given.
function acquire(lock, timeoutMs) {
  if (!timeoutMs) {
    return lock.acquire();
  }
  let timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Timeout('acquire: timed out')), timeoutMs);
  });
  return Promise.race([lock.acquire(), expired]).finally(() => clearTimeout(timer));
}

let held = null;

async function lock(req) {
  const l = client.lock(key).ttl(ttl);
  try {
    await acquire(l, req.timeout_ms);
  } catch (e) {
    if (e instanceof EtcdLockFailedError) {
      // The txn found the key and the library revoked its lease.
      error('certain', e);
      return;
    }
    if (e instanceof Timeout) {
      // The acquire is still in flight and may yet succeed, with a lease
      // kept alive: only the end of this process ends it.
      error('unknown', e);
      process.exit(1);
    }
    // As the library's own lock.do() does after a failed acquire.
    await l.release().catch(() => undefined);
    error('unknown', e);
    return;
  }
  let kv;
  try {
    const res = await client.get(key).exec();
    kv = res.kvs[0];
  } catch (e) {
    await l.release().catch(() => undefined);
    error('unknown', 'read the lock key: ' + e.message);
    return;
  }
  const lease = await l.leaseId();
  if (!kv || kv.lease !== lease) {
    await l.release().catch(() => undefined);
    error('certain', 'acquired, but the key was gone at once');
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

async function main() {
  const lines = readline.createInterface({ input: process.stdin });
  send({ event: 'ready' }); // the library is loaded: start-up is over
  for await (const line of lines) {
    const req = JSON.parse(line);
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
  process.exit(0);
}

main();
