package mutants

// Mistakes about what a client knows of its lock: whether its holder is
// told the lease is gone, and what an answer that never came means.
const (
	// silentLoss keeps its lease with a session as the control does but
	// never passes the session's end on to the holder (Grant.Lost never
	// closes): a holder cut off past the TTL acts on a lock it lost until
	// it releases (lease: belief overrun past the policy's bound, in
	// client-isolation).
	silentLoss bug = "silent-loss"
	// timeoutAsGranted takes a create txn that timed out for a grant,
	// since it was sent: when another client held the key, two hold at
	// once (exclusion, in late-answers).
	timeoutAsGranted bug = "timeout-as-granted"
)

// The catalogue gains this file's mutants before init registers it:
// package variables are all set before any init runs.
var _ = func() bool {
	for _, bg := range []bug{silentLoss, timeoutAsGranted} {
		catalogue = append(catalogue, struct {
			base base
			bug  bug
		}{tryLock, bg})
	}
	return true
}()
