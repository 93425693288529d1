// lockbench adapter (docs/adapters.md) for Apache Curator's InterProcessMutex
// (Debian's libcurator-recipes-java 5.4.0 over libzookeeper-java 3.8.0).
//
// It uses the lock the way Curator's documentation shows it:
// CuratorFrameworkFactory.newClient(connectString, sessionTimeoutMs,
// connectionTimeoutMs, new ExponentialBackoffRetry(1000, 3)), start(),
// blockUntilConnected(); one InterProcessMutex(client, path), reused;
// acquire(time, unit) for a lock with timeout_ms, acquire() otherwise;
// release(); and a ConnectionStateListener, which the recipe's "Error
// Handling" note strongly recommends, watching SUSPENDED and LOST.
//
// lockbench runs it with Java's single-file source launcher: the source
// comes on file descriptor 3 (/dev/fd/3, --source), so nothing is compiled
// to disk.
//
// How it answers the protocol:
// - The grant: InterProcessMutex does not say which node it holds, so after
//   acquire the adapter reads getParticipantNodes() (sorted: the first is
//   the holder's) and that node's Stat (checkExists), and answers with the
//   node's path as the key, its czxid as the token and its ephemeral owner
//   (this client's session) in hex as the lease. A first node that is not
//   this session's (the session expired as acquire returned) is released
//   and answered as an error.
// - The mutex belongs to the thread that acquired it (release() from
//   another thread throws), so one worker thread runs every lock, unlock
//   and close; the main thread reads stdin.
// - cancel interrupts the worker while it is in acquire: Java's way for a
//   caller to give up a blocking call. Curator's lock loop deletes its
//   node on any exception, the interrupt's included. The error is certain
//   only if no node of this session is left under the lock (read back).
// - A grant whose loss was reported and that lockbench never unlocked is
//   released before the next acquire, as the caller's
//   finally { mutex.release(); } would: the mutex is re-entrant, and an
//   acquire by a thread that still owns it returns at once without asking
//   ZooKeeper.
// - close closes the client: its session ends, and ZooKeeper deletes the
//   session's nodes.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class Lock {
    // out guards stdout and the fields below it: a lost event and a reply
    // never interleave, and a cancel interrupts only an acquire in flight.
    static final Object out = new Object();
    static final PrintStream stdout = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    static boolean held; // a grant is out, and no loss was reported for it
    static ConnectionState state = ConnectionState.CONNECTED;
    static boolean inFlight; // a lock request is not answered yet
    static boolean cancelled; // a cancel came for it
    static boolean acquiring; // the worker is in acquire: a cancel interrupts it
    static Thread worker;

    // The worker's own state (only it touches these).
    static CuratorFramework client;
    static InterProcessMutex mutex;
    static String path;
    static boolean owned; // acquired and not released: lost or not

    public static void main(String[] args) throws Exception {
        String endpoints = System.getenv("LOCKBENCH_ENDPOINTS");
        int sessionMs = Integer.parseInt(System.getenv("LOCKBENCH_TTL")) * 1000;
        path = System.getenv("LOCKBENCH_LOCK");
        // The connection timeout is the session's: Curator warns when the
        // session timeout is the shorter. The retry policy is the docs'.
        client = CuratorFrameworkFactory.newClient(endpoints, sessionMs, sessionMs, new ExponentialBackoffRetry(1000, 3));
        client.getConnectionStateListenable().addListener((c, newState) -> {
            synchronized (out) {
                state = newState;
                // Curator's docs (the lock recipes' "Error Handling"): after
                // SUSPENDED "you cannot be certain that you still hold the
                // lock unless you subsequently receive a RECONNECTED
                // state"; after LOST "it is certain that you no longer hold
                // the lock". Only LOST is a certain loss, but a holder that
                // cannot be certain must stop acting on the lock, so both
                // end the grant (the first to come).
                if (held && (newState == ConnectionState.SUSPENDED || newState == ConnectionState.LOST)) {
                    held = false;
                    write("{\"event\":\"lost\"}");
                }
            }
        });
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("curator adapter: not connected to " + endpoints + " within 30 s");
            System.exit(1);
        }
        mutex = new InterProcessMutex(client, path);
        // One read of the lock's children before ready: it writes nothing,
        // and loads Curator's request path into the JVM (a second, with
        // eight JVMs on two cores), which would otherwise be measured as
        // the first lock's wait.
        try {
            mutex.getParticipantNodes();
        } catch (KeeperException.NoNodeException e) {
            // no lock node yet
        }

        LinkedBlockingQueue<String> requests = new LinkedBlockingQueue<>();
        worker = new Thread(() -> serve(requests), "lockbench-worker");
        worker.setDaemon(true);
        worker.start();
        synchronized (out) {
            write("{\"event\":\"ready\"}"); // the JVM is up and connected
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String op = op(line);
            synchronized (out) {
                if (op.equals("cancel")) {
                    if (inFlight) { // else ignored, as the protocol says
                        cancelled = true;
                        if (acquiring) {
                            worker.interrupt();
                        }
                    }
                    continue;
                }
                if (op.equals("lock")) {
                    inFlight = true;
                    cancelled = false;
                }
            }
            requests.put(line);
        }
        // stdin closed: lockbench is gone or killed us; end the session.
        client.close();
        System.exit(0);
    }

    static void serve(LinkedBlockingQueue<String> requests) {
        while (true) {
            String line;
            try {
                line = requests.take();
            } catch (InterruptedException e) {
                continue; // only a cancel interrupts, and only in acquire
            }
            String op = op(line);
            switch (op) {
                case "lock":
                    lock(timeoutMs(line));
                    break;
                case "unlock":
                    unlock();
                    break;
                case "close":
                    synchronized (out) {
                        held = false;
                    }
                    client.close(); // the session's nodes go with it
                    reply("{\"reply\":\"closed\"}");
                    System.exit(0);
                    break;
                default:
                    System.err.println("curator adapter: unknown request " + line);
                    System.exit(2);
            }
        }
    }

    static void lock(long timeoutMs) {
        if (owned) {
            // A grant lost and never unlocked: released as the caller's
            // finally would (it deletes only this mutex's own node).
            owned = false;
            try {
                mutex.release();
            } catch (Exception e) {
                System.err.println("curator adapter: release of the lost grant: " + e);
            }
        }
        synchronized (out) {
            if (cancelled) { // before acquire: nothing was asked of ZooKeeper
                inFlight = false;
                write(error("certain", "cancelled before acquire"));
                return;
            }
            acquiring = true;
        }
        boolean ok = false;
        Exception err = null;
        try {
            if (timeoutMs >= 0) {
                ok = mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS);
            } else {
                mutex.acquire();
                ok = true;
            }
        } catch (Exception e) {
            err = e;
        }
        synchronized (out) {
            acquiring = inFlight = false;
            Thread.interrupted(); // a cancel that came as acquire returned
        }
        if (err != null) {
            // (After a cancel, lockbench says so before this message.)
            failed("acquire: " + err);
            return;
        }
        if (!ok) {
            // acquire(time, unit) deleted its node before returning false
            // (a failed delete would have thrown).
            reply(error("certain", "acquire: not acquired within " + timeoutMs + " ms"));
            return;
        }
        owned = true;
        String node;
        Stat stat;
        long session;
        try {
            session = client.getZookeeperClient().getZooKeeper().getSessionId();
            node = mutex.getParticipantNodes().iterator().next();
            stat = client.checkExists().forPath(node);
        } catch (Exception e) {
            giveBack("acquired, but the holder's node could not be read: " + e);
            return;
        }
        if (stat == null || stat.getEphemeralOwner() != session) {
            giveBack("acquired, but the first node " + node + " is not this session's");
            return;
        }
        synchronized (out) {
            write("{\"reply\":\"granted\",\"token\":" + stat.getCzxid() + ",\"key\":" + quote(node)
                    + ",\"lease\":\"" + Long.toHexString(session) + "\"}");
            held = true;
            if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                held = false; // the connection went before the grant was out
                write("{\"event\":\"lost\"}");
            }
        }
    }

    // giveBack releases a grant the adapter cannot report, and answers the
    // lock with an error: certain once the release went through.
    static void giveBack(String why) {
        owned = false;
        try {
            mutex.release();
        } catch (Exception e) {
            reply(error("unknown", why + "; release: " + e));
            return;
        }
        reply(error("certain", why + "; released"));
    }

    // failed answers an acquire that threw: Curator deleted its node unless
    // that delete failed too, so the error is certain only if no node of
    // this session is left under the lock.
    static void failed(String why) {
        try {
            long session = client.getZookeeperClient().getZooKeeper().getSessionId();
            for (String node : mutex.getParticipantNodes()) {
                Stat stat = client.checkExists().forPath(node);
                if (stat != null && stat.getEphemeralOwner() == session) {
                    reply(error("unknown", why + "; a node of this session is left: " + node));
                    return;
                }
            }
        } catch (KeeperException.NoNodeException e) {
            // the lock's node does not exist: nothing of ours under it
        } catch (Exception e) {
            reply(error("unknown", why + "; could not look for a node left: " + e));
            return;
        }
        reply(error("certain", why));
    }

    static void unlock() {
        synchronized (out) {
            held = false;
        }
        if (!owned) {
            reply(error("certain", "unlock: not held"));
            return;
        }
        owned = false;
        try {
            mutex.release();
        } catch (Exception e) {
            reply(error("unknown", "release: " + e));
            return;
        }
        reply("{\"reply\":\"released\"}");
    }

    static final Pattern OP = Pattern.compile("\"op\"\\s*:\\s*\"([a-z]+)\"");
    static final Pattern TIMEOUT = Pattern.compile("\"timeout_ms\"\\s*:\\s*([0-9]+)");

    static String op(String line) {
        Matcher m = OP.matcher(line);
        return m.find() ? m.group(1) : "";
    }

    static long timeoutMs(String line) {
        Matcher m = TIMEOUT.matcher(line);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    static void reply(String line) {
        synchronized (out) {
            write(line);
        }
    }

    // write prints one line and flushes; out held.
    static void write(String line) {
        stdout.print(line + "\n");
        stdout.flush();
    }

    static String error(String outcome, String message) {
        return "{\"reply\":\"error\",\"outcome\":\"" + outcome + "\",\"error\":" + quote(message) + "}";
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
