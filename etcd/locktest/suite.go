package locktest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	conformance "github.com/lockbench/lockbench/locktest"
)

// usedPrefixes are the namespaces of this process's earlier subtests: a
// lease of theirs that ends late deletes its keys there, which the
// keyspace watch must not blame on the current subtest.
var usedPrefixes sync.Map

// suite is one subtest's neutral suite, with etcd's own around it: the
// wire inspection, the keys beside the namespace, the keyspace watch.
type suite struct {
	*conformance.Suite
	t    T
	env  Env
	ctx  context.Context
	opts etcdlocks.Options
	// admin is the neutral suite's admin connection's etcd client.
	admin *clientv3.Client
	wire  *wireCheck
	// siblings are keys beside the namespace, as they were put.
	siblings []*mvccpb.KeyValue
	// watch sees every write in the keyspace from start on.
	watch clientv3.WatchChan
	start int64
}

func newSuite(t T, factory locks.Factory, env Env) *suite {
	t.Helper()
	wire := &wireCheck{}
	ns := conformance.NewSuite(t, conformance.Env{
		Backend: wireBackend{wire: wire, keepAlive: env.KeepAlive}, Endpoints: env.Endpoints, Factory: factory,
		Root: env.Root, TTL: env.TTL, Clients: env.Clients, Rounds: env.Rounds, Timeout: env.Timeout,
		OnGrant: etcdGrant,
	})
	s := &suite{Suite: ns, t: t, env: env, ctx: ns.Ctx(), wire: wire,
		opts:  etcdlocks.Options{Options: ns.Options(), KeepAlive: env.KeepAlive},
		admin: ns.Admin().(*etcd.Admin).Client}
	wire.prefix = s.opts.Prefix
	usedPrefixes.Store(s.opts.Prefix, true)
	ns.AfterClose(s.finish)

	// Keys beside the namespace: the prefix without its slash, keys that
	// sort just before and after it, a sibling namespace with the same
	// stem, and the lock's key under the root instead of the namespace.
	id := ns.ID()
	for _, k := range []string{
		env.Root + id,
		env.Root + id + ".",
		env.Root + id + "0",
		env.Root + id + "-sibling/locks/" + locks.DefaultName,
		env.Root + id + "-sibling/locks/" + locks.DefaultName + "/x",
		env.Root + "locks/" + locks.DefaultName + "-" + id,
	} {
		if _, err := s.admin.Put(s.ctx, k, ns.ID()+k); err != nil {
			t.Fatalf("put sibling key %s: %v", k, err)
		}
		resp, err := s.admin.Get(s.ctx, k)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("read sibling key %s: %v", k, err)
		}
		s.siblings = append(s.siblings, resp.Kvs[0])
		s.start = resp.Header.Revision
	}
	if !env.SharedCluster {
		s.watch = s.admin.Watch(clientv3.WithRequireLeader(s.ctx), "", clientv3.WithFromKey(), clientv3.WithRev(s.start+1))
	}
	return s
}

// etcdGrant is what etcd's suite asks of every grant beyond the neutral
// checks: a Lost channel, and a token that is the key's create revision
// (locks.Grant), the number an etcd fenced resource compares, so that any
// other rejects the rightful holder.
func etcdGrant(s *conformance.Suite, g *locks.Grant) {
	t := s.T()
	t.Helper()
	if g.Token <= 0 || g.Lost == nil {
		t.Fatalf("Lock: incomplete grant %+v", g)
	}
	if created, ok := s.Created(g); ok && created != g.Token {
		t.Errorf("Lock: token %d is not the key's create revision %d: a fenced write would be rejected", g.Token, created)
	}
}

// finish checks, once every Locker and client is closed, that nothing
// outside the namespace was asked for, changed or written.
func (s *suite) finish() {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() {
		for _, kv := range s.siblings {
			s.admin.Delete(ctx, string(kv.Key))
		}
	}()
	for _, v := range s.wire.violations() {
		t.Errorf("request outside the namespace %s: %s", s.opts.Prefix, v)
	}
	for _, want := range s.siblings {
		resp, err := s.admin.Get(ctx, string(want.Key))
		if err != nil {
			t.Errorf("read sibling key %s: %v", want.Key, err)
			continue
		}
		if len(resp.Kvs) == 0 {
			t.Errorf("sibling key %q outside the namespace was deleted", want.Key)
			continue
		}
		got := resp.Kvs[0]
		if !bytes.Equal(got.Value, want.Value) || got.CreateRevision != want.CreateRevision ||
			got.ModRevision != want.ModRevision || got.Version != want.Version || got.Lease != want.Lease {
			t.Errorf("sibling key %q outside the namespace changed: was %v, is %v", want.Key, want, got)
		}
	}
	if s.watch != nil {
		s.watchedInside(ctx)
	}
}

// watchedInside reads the keyspace watch up to a fence write of its own:
// every write it saw before must be inside the namespace (or an earlier
// subtest's).
func (s *suite) watchedInside(ctx context.Context) {
	t := s.t
	fence, err := s.admin.Put(ctx, s.opts.Prefix+"fence", "")
	if err != nil {
		t.Errorf("fence write: %v", err)
		return
	}
	for {
		select {
		case wr, ok := <-s.watch:
			if !ok || wr.Err() != nil {
				t.Errorf("keyspace watch ended: %v", wr.Err())
				return
			}
			for _, ev := range wr.Events {
				if ev.Kv.ModRevision > fence.Header.Revision {
					continue
				}
				if k := string(ev.Kv.Key); !strings.HasPrefix(k, s.opts.Prefix) && !earlier(k) {
					t.Errorf("write outside the namespace %s: %s %q at revision %d", s.opts.Prefix, ev.Type, k, ev.Kv.ModRevision)
				}
			}
			if wr.Header.Revision >= fence.Header.Revision {
				return
			}
		case <-ctx.Done():
			t.Errorf("keyspace watch: no event up to revision %d", fence.Header.Revision)
			return
		}
	}
}

func earlier(key string) bool {
	found := false
	usedPrefixes.Range(func(p, _ any) bool {
		found = strings.HasPrefix(key, p.(string))
		return !found
	})
	return found
}

// wireBackend is etcd as the suite dials its lock clients: every request
// inspected on the wire, no per-request deadline (a check's own context
// bounds it), and each Locker with a lease of its own, as a user's
// Locker has (Conn.Lease nil; SharedLease gives one).
type wireBackend struct {
	wire      *wireCheck
	keepAlive etcdlocks.KeepAlive
}

func (wireBackend) Name() string { return etcdlocks.Backend }

func (b wireBackend) Dial(ctx context.Context, endpoints []string, opts backend.DialOptions) (backend.Connection, error) {
	eb := etcd.Backend{RPCTimeout: -1}
	eb.ClientConfig.DialOptions = b.wire.dialOptions()
	c, err := eb.Dial(ctx, endpoints, opts)
	if err != nil {
		return nil, err
	}
	return ownLeases{Connection: c.(*etcd.Connection), keepAlive: b.keepAlive}, nil
}

// Admin is the suite's own client: not inspected, for what it reads and
// writes is the suite's.
func (wireBackend) Admin(ctx context.Context, endpoints []string) (backend.Admin, error) {
	return etcd.Backend{}.Admin(ctx, endpoints)
}

// ownLeases is a client whose sessions give its Lockers no shared lease.
type ownLeases struct {
	*etcd.Connection
	keepAlive etcdlocks.KeepAlive
}

func (c ownLeases) NewSession(context.Context, time.Duration) (backend.Session, error) {
	return ownSession{&etcdlocks.Conn{Client: c.Client, KeepAlive: c.keepAlive}}, nil
}

// ownSession is the Conn of a client whose Lockers keep their own leases,
// which they revoke when closed: there is nothing of its own to end.
type ownSession struct{ conn *etcdlocks.Conn }

func (s ownSession) Conn() locks.Conn          { return s.conn }
func (ownSession) Lease() int64                { return 0 }
func (ownSession) Close(context.Context) error { return nil }
