package runner

import (
	"context"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenario"
)

// criticalSection does the workload's work while holding g. It returns
// true when the lease was lost (and recorded as such) so there is nothing
// to release.
func (c *client) criticalSection(ctx context.Context, gen int, cli *clientv3.Client, g *locks.Grant, w scenario.Workload) (lost bool) {
	leaseLost := func() bool {
		select {
		case <-g.Lost:
			c.emit(gen, history.Event{Type: history.OK, F: history.FLeaseLost, Token: g.Token})
			return true
		default:
			return false
		}
	}
	// The hold: end it early, as a careful client does, when the lease is
	// reported lost — unless the process was frozen meanwhile: then it wakes
	// and carries on, unaware, as a process after a GC pause does. Not on
	// ctx: a holder finishes its work at run end. Only during the hold is
	// the client a fault's "holder".
	holdFor := func() bool {
		defer c.setState(gen, idle, nil, 0)
		if w.Hold <= 0 {
			return false
		}
		p0 := c.pauseCount()
		t := time.NewTimer(w.Hold.D())
		defer t.Stop()
		select {
		case <-t.C:
		case <-g.Lost:
			if c.checkpoint(context.Background()); c.pauseCount() == p0 {
				return leaseLost()
			}
		}
		c.checkpoint(context.Background())
		return false
	}
	if w.Kind == scenario.WorkloadHold {
		if holdFor() {
			return true
		}
		return leaseLost()
	}
	if leaseLost() {
		return true
	}
	// read → hold → write(+1). A pause freezes the process between its
	// read and its write: the stale write the scenario is about.
	opCtx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	key := counterKey(c.r.cfg.Prefix)
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FRead})
	resp, err := cli.Get(opCtx, key)
	if err != nil || len(resp.Kvs) == 0 {
		c.emit(gen, history.Event{Type: history.Fail, F: history.FRead, Error: errString(err, "counter missing")})
		return leaseLost()
	}
	v, _ := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	c.emit(gen, history.Event{Type: history.OK, F: history.FRead, Value: history.IntValue(v)})
	if holdFor() {
		return true
	}
	wctx, wcancel := context.WithTimeout(context.Background(), opTimeout)
	defer wcancel()
	nv := history.IntValue(v + 1)
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FWrite, Value: nv, Token: g.Token})
	if w.Kind == scenario.WorkloadCounterFenced {
		// The resource accepts the write only while the grant's key still
		// exists at the grant's revision: a stale holder is rejected.
		tr, err := cli.Txn(wctx).If(clientv3.Compare(clientv3.CreateRevision(g.Key), "=", g.Token)).
			Then(clientv3.OpPut(key, strconv.FormatInt(v+1, 10))).Commit()
		switch {
		case err != nil:
			c.emit(gen, history.Event{Type: history.Info, F: history.FWrite, Value: nv, Token: g.Token, Error: err.Error()})
		case !tr.Succeeded:
			c.emit(gen, history.Event{Type: history.Fail, F: history.FWrite, Value: nv, Token: g.Token, Error: "stale token"})
		default:
			c.emit(gen, history.Event{Type: history.OK, F: history.FWrite, Value: nv, Token: g.Token})
		}
	} else {
		if _, err := cli.Put(wctx, key, strconv.FormatInt(v+1, 10)); err != nil {
			c.emit(gen, history.Event{Type: history.Info, F: history.FWrite, Value: nv, Token: g.Token, Error: err.Error()})
		} else {
			c.emit(gen, history.Event{Type: history.OK, F: history.FWrite, Value: nv, Token: g.Token})
		}
	}
	return leaseLost()
}

func (c *client) release(gen int, locker locks.Locker, g *locks.Grant) {
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FRelease, Token: g.Token})
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := locker.Unlock(ctx, g); err != nil {
		c.emit(gen, history.Event{Type: history.Info, F: history.FRelease, Token: g.Token, Error: err.Error()})
		return
	}
	c.emit(gen, history.Event{Type: history.OK, F: history.FRelease, Token: g.Token})
}
