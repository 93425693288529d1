package chaos

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The store faults: what an operator or etcd's own maintenance does to a
// running cluster through its API, as etcd's robustness suite injects them
// during traffic (tests/robustness/failpoint in etcd-io/etcd: compaction,
// defragmentation, a leader transfer). They need a cluster lockbench
// started: compacting or defragmenting someone else's cluster is not a
// test's to do.
func init() {
	operator := Needs{Members: true, OperatorAPI: true}
	register(spec{"compact", NoTarget, operator, CostWatchRestart}, compact)
	register(spec{"compact-loop", NoTarget, Needs{Members: true, OperatorAPI: true, Arg: ArgEvery}, CostWatchRestart}, compactLoop)
	// A defrag stops the member's reads and writes while it copies the
	// database: to its clients, like a member that does not answer.
	register(spec{"defrag", MemberTarget, operator, CostElection}, defrag)
	register(spec{"defrag-all", NoTarget, operator, CostElection}, defragAll)
	register(spec{"move-leader", MemberTarget, operator, CostElection}, moveLeader)
	handovers["move-leader"] = true
}

// compact compacts the history to the current revision, physically: the
// step ends once the old revisions are gone from the member that served
// it. A watch from an older revision then gets ErrCompacted.
func compact(ctx context.Context, w Store, _ int, _ time.Duration) (Undo, error) {
	return nil, w.Compact(ctx, true)
}

// DefaultCompactEvery is compact-loop's interval when the step gives none.
const DefaultCompactEvery = 100 * time.Millisecond

// compactLoop compacts to the current revision every interval until it is
// undone, as an aggressive periodic compactor (--auto-compaction-mode
// revision) does: any watch that starts behind the head may be compacted
// before it catches up. A compaction that fails (no leader for a moment,
// or nothing new to compact) is skipped; undo fails only when none
// succeeded.
func compactLoop(_ context.Context, w Store, _ int, every time.Duration) (Undo, error) {
	if every <= 0 {
		every = DefaultCompactEvery
	}
	// Its own context: the loop outlives the step's Inject, and its undo
	// (always called, at the latest when the run ends) stops it.
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg        sync.WaitGroup
		done      int
		firstFail error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			err := w.Compact(cctx, false)
			ccancel()
			switch {
			case err == nil:
				done++
			case firstFail == nil && !errors.Is(err, context.Canceled):
				firstFail = err
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func(context.Context) error {
		cancel()
		wg.Wait()
		if done == 0 && firstFail != nil {
			return errors.Join(errors.New("compact-loop: no compaction succeeded"), firstFail)
		}
		return nil
	}, nil
}

// defrag defragments one member's backend.
func defrag(ctx context.Context, w Store, t int, _ time.Duration) (Undo, error) {
	return nil, w.Defragment(ctx, t)
}

// defragAll defragments every member in turn, as an operator's
// maintenance script does (etcdctl defrag --cluster).
func defragAll(ctx context.Context, w interface {
	Membership
	Store
}, _ int, _ time.Duration) (Undo, error) {
	for _, i := range w.RunningMembers() {
		if err := w.Defragment(ctx, i); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// moveLeader hands the leadership to the target member: a planned leader
// change (etcdctl move-leader, or a rolling upgrade's hand-over), which
// costs an election without a dead member.
func moveLeader(ctx context.Context, w Store, t int, _ time.Duration) (Undo, error) {
	return nil, w.MoveLeader(ctx, t)
}
