package runner

import (
	"context"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

// heldGrants are the grants clients hold and have not begun to release,
// by token: the keys whose deletion the observer must explain.
type heldGrants struct{ m sync.Map }

func (h *heldGrants) add(g *locks.Grant) { h.m.Store(g.Token, struct{}{}) }
func (h *heldGrants) done(g *locks.Grant) {
	if g != nil {
		h.m.Delete(g.Token)
	}
}
func (h *heldGrants) has(token int64) bool { _, ok := h.m.Load(token); return ok }

// observe watches the run's keys from revision from on and records, as
// history.FKeyDeleted, every deletion of a key whose grant a client still
// holds — with whether its lease was still alive — so the checker can tell
// a holder's key removed by someone else (symmetry) from one its lease
// took away (lease), which no client reports. A broken watch (a member
// lost) is opened again from the next revision. It returns when ctx ends.
func (r *runner) observe(ctx context.Context, from int64) {
	for ctx.Err() == nil {
		wch := r.admin.Watch(ctx, r.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithPrevKV(),
			clientv3.WithFilterPut(), clientv3.WithRev(from))
		for wr := range wch {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				from = ev.Kv.ModRevision + 1
				if ev.Type == mvccpb.DELETE && ev.PrevKv != nil && r.held.has(ev.PrevKv.CreateRevision) {
					r.recordDeletion(ctx, ev)
				}
			}
		}
		Sleep(ctx, 50*time.Millisecond)
	}
}

// recordDeletion records a held key's deletion, its cause told by asking
// etcd whether the key's lease is still alive: a client deleted the key
// (CauseDelete) or the lease's end took it (CauseLease).
func (r *runner) recordDeletion(ctx context.Context, ev *clientv3.Event) {
	kv := ev.PrevKv
	cause := history.CauseDelete
	if kv.Lease != 0 {
		tctx, cancel := context.WithTimeout(ctx, opTimeout)
		ttl, err := r.admin.TimeToLive(tctx, clientv3.LeaseID(kv.Lease))
		cancel()
		switch {
		case err != nil:
			cause = "" // unknown: neither check counts it
		case ttl.TTL <= 0:
			cause = history.CauseLease
		}
	}
	r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FKeyDeleted, Lock: locks.DefaultName,
		Token: kv.CreateRevision, Key: string(kv.Key),
		Value: history.DeletionValue(history.KeyDeletion{Revision: ev.Kv.ModRevision, Cause: cause})})
}
