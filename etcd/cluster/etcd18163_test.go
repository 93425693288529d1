package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcd #18163 says concurrency.Election.Observe (v3.7.3 election.go,
// observe) may report the wrong leader: with no candidate key it watches
// the prefix and reports the first PUT of the first answer that has one,
// not the one with the lowest create revision.

// observed is one answer an Observe channel gave.
type observed struct {
	key             string
	create, mod, at int64 // the key's create and mod revisions; the answer's header revision
	first, proclm   bool  // stamped with the key's creation revision (observe's prefix watch); a proclamation
}

// keyLife is one life of a candidate key, from the audit watch: its name
// (a Session's key is named by its lease, so one name has many lives) and
// its create revision.
type keyLife struct {
	key    string
	create int64
}

// leaderAt is the key that led at revision rev: of the keys alive at rev,
// the one created first ("" when none). lives maps each life to the
// revision it was deleted at (0: not within the run).
func leaderAt(lives map[keyLife]int64, rev int64) keyLife {
	var best keyLife
	for l, deleted := range lives {
		if l.create <= rev && (deleted == 0 || deleted > rev) && (best.key == "" || l.create < best.create) {
			best = l
		}
	}
	return best
}

// judgeObserved checks one observer's answers against the keys' lives:
// out of order (a create revision below the previous answer's), wrong
// (the key did not lead when the answer says: a proclamation at its own
// revision, any other answer at its header revision), and stale (a
// proclamation whose header revision is past its key's life: observe
// passes on the header of the watch answer that carried it).
func judgeObserved(lives map[keyLife]int64, obs []observed) (outOfOrder, wrong, stale []string) {
	var last int64
	for _, o := range obs {
		if o.create < last {
			outOfOrder = append(outOfOrder, fmt.Sprintf("%s (created at %d) after one created at %d", o.key, o.create, last))
		}
		last = max(last, o.create)
		at := o.at
		if o.proclm {
			at = o.mod
			if l := leaderAt(lives, o.at); l != (keyLife{o.key, o.create}) {
				stale = append(stale, fmt.Sprintf("%s (created at %d) proclaimed at %d, stamped %d, when %q (created at %d) led", o.key, o.create, o.mod, o.at, l.key, l.create))
			}
		}
		if l := leaderAt(lives, at); l != (keyLife{o.key, o.create}) {
			wrong = append(wrong, fmt.Sprintf("%s (created at %d) reported for revision %d (stamped with its creation %v), when %q (created at %d) led", o.key, o.create, at, o.first, l.key, l.create))
		}
	}
	return outOfOrder, wrong, stale
}

// TestJudgeObserved: the judge itself, on made-up lives.
func TestJudgeObserved(t *testing.T) {
	lives := map[keyLife]int64{{"a", 10}: 13, {"b", 12}: 0, {"c", 15}: 0, {"a", 14}: 0}
	for _, tc := range []struct {
		name                     string
		obs                      []observed
		outOfOrder, wrong, stale int
	}{
		{"right", []observed{{key: "a", create: 10, at: 11}, {key: "b", create: 12, at: 13}, {key: "b", create: 12, at: 16}}, 0, 0, 0},
		{"a deleted key", []observed{{key: "a", create: 10, at: 13}}, 0, 1, 0},
		{"not the oldest", []observed{{key: "b", create: 12, at: 12}}, 0, 1, 0},
		{"a key's later life", []observed{{key: "b", create: 12, at: 14}, {key: "a", create: 14, at: 14}}, 0, 1, 0},
		{"back in time", []observed{{key: "b", create: 12, at: 13}, {key: "a", create: 10, at: 11}}, 1, 0, 0},
		{"a proclamation stamped late", []observed{{key: "a", create: 10, mod: 11, at: 14, proclm: true}}, 0, 0, 1},
	} {
		o, w, st := judgeObserved(lives, tc.obs)
		if len(o) != tc.outOfOrder || len(w) != tc.wrong || len(st) != tc.stale {
			t.Errorf("%s: out of order %v, wrong %v, stale %v; want %d, %d, %d", tc.name, o, w, st, tc.outOfOrder, tc.wrong, tc.stale)
		}
	}
}

// TestEtcd18163 runs Election as leader election is run, with churn that
// empties the election often (so that Observe takes its prefix-watch
// path): 4 candidates campaign 0–40 ms apart with a wait cut short at
// random (Campaign resigns then), proclaim once or twice when elected and
// resign; 3
// observers Observe throughout. An audit watch of the prefix gives every
// key's life, and each answer is judged by it: the create revisions an
// observer reports must not go back, and the key it names must have led
// when the answer says (its header revision; a proclamation's own
// revision). Printed with -v; asserted: the order, which is what the issue
// says breaks, and that every answer named the leader of its revision.
func TestEtcd18163(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	cli := client(t, c.Endpoints()...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const prefix = "/18163/"
	start, err := cli.Get(ctx, "/18163-start")
	if err != nil {
		t.Fatal(err)
	}
	audit := cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(start.Header.Revision+1))
	run, stop := context.WithTimeout(ctx, 6*time.Second)
	defer stop()
	var wg sync.WaitGroup
	obs := make([][]observed, 3)
	for i := range obs {
		wg.Go(func() { obs[i] = observe(run, t, cli, prefix) })
	}
	for i := range 4 {
		wg.Go(func() { campaign(run, t, cli, prefix, uint64(i)) })
	}
	wg.Wait()
	// The audit watch is read up to a last put under the prefix.
	if _, err := cli.Put(ctx, prefix+endKey, ""); err != nil {
		t.Fatal(err)
	}
	lives := auditLives(t, audit, prefix+endKey)
	answers, firsts := 0, 0
	for i, o := range obs {
		outOfOrder, wrong, stale := judgeObserved(lives, o)
		for _, a := range o {
			answers++
			if a.first {
				firsts++
			}
		}
		t.Logf("observer %d: %d answers, %d out of create-revision order, %d naming a key that did not lead then, %d proclamations stamped with a revision past their key's life", i, len(o), len(outOfOrder), len(wrong), len(stale))
		for _, w := range stale[:min(len(stale), 2)] {
			t.Logf("  stale: %s", w)
		}
		for _, w := range append(outOfOrder, wrong...) {
			t.Errorf("observer %d: %s", i, w)
		}
	}
	t.Logf("%d candidate key lives, %d answers (%d stamped with their key's creation revision: observe's prefix-watch path, or a Get right after the creation)", len(lives), answers, firsts)
}

// campaign is one candidate: campaign with a wait cut short at random,
// proclaim once or twice when elected, resign, until ctx ends.
func campaign(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, seed uint64) {
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Error(err)
		return
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(seed, 18163))
	for ctx.Err() == nil {
		// A pause between campaigns leaves the election empty at times.
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		e := concurrency.NewElection(s, prefix)
		cctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(20))*time.Millisecond)
		err := e.Campaign(cctx, "v0")
		cancel()
		if err != nil {
			continue // Campaign resigned on the cancelled wait
		}
		for p := range 1 + rng.IntN(2) {
			e.Proclaim(ctx, fmt.Sprintf("v%d", p+1))
		}
		e.Resign(context.WithoutCancel(ctx))
	}
}

// observe records what one Observe channel answers until ctx ends.
func observe(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) (out []observed) {
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Error(err)
		return nil
	}
	defer s.Close()
	for resp := range concurrency.NewElection(s, prefix).Observe(ctx) {
		kv := resp.Kvs[0]
		// observe's prefix watch sets the header revision to the PUT's
		// own; its Get and its watch of one key leave the server's.
		out = append(out, observed{key: string(kv.Key), create: kv.CreateRevision, mod: kv.ModRevision, at: resp.Header.Revision,
			first: resp.Header.Revision == kv.ModRevision && kv.Version == 1, proclm: kv.Version > 1})
	}
	return out
}

// endKey, under the prefix, ends the audit.
const endKey = "~end"

// auditLives reads the audit watch, up to the put of end, into every key
// life and the revision it was deleted at (0: not deleted).
func auditLives(t *testing.T, audit clientv3.WatchChan, end string) map[keyLife]int64 {
	t.Helper()
	lives := map[keyLife]int64{}
	current := map[string]int64{} // a key's live create revision
	for {
		wr, ok := <-audit
		if !ok || wr.Err() != nil {
			t.Fatal(errors.Join(errors.New("audit watch ended"), wr.Err()))
		}
		for _, ev := range wr.Events {
			k := string(ev.Kv.Key)
			switch {
			case k == end:
				return lives
			case ev.Type == mvccpb.DELETE:
				lives[keyLife{k, current[k]}] = ev.Kv.ModRevision
			case ev.Kv.Version == 1:
				current[k] = ev.Kv.CreateRevision
				lives[keyLife{k, ev.Kv.CreateRevision}] = 0
			}
		}
	}
}
