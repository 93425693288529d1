package chaos

import (
	"context"
	"fmt"
	"time"
)

// restart-empty: a member that keeps no data on disk (Redis without
// persistence) is killed and started again at once, empty: whatever it
// held — a lock's key among them — is gone, and it answers as if it never
// had it. Redlock's critics' case (an instance restarted before the keys
// it had could expire) rests on it. A member that keeps its data (etcd's,
// ZooKeeper's) cannot do it: a restart there is restart-member, and an
// empty member is replace-member.
func init() {
	register(spec{"restart-empty", MemberTarget, Needs{Members: true, EmptyRestart: true}, CostElection}, restartEmpty)
}

// restartEmpty kills member t and starts it again at once; a deployment
// that takes the fault (Needs.EmptyRestart) starts it with no data.
func restartEmpty(ctx context.Context, w MemberFaults, t int, _ time.Duration) (Undo, error) {
	if err := w.CrashMember(t); err != nil {
		return nil, err
	}
	if err := w.RestartMember(ctx, t); err != nil {
		return nil, fmt.Errorf("start member %d again: %w", t, err)
	}
	return nil, nil
}
