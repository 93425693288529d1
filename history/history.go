// Package history defines lockbench's event format (docs/design.md §3) and a
// recorder that many client goroutines share.
//
// A history is the only thing the checker reads, so every fact a verdict
// rests on must be an event here. Field names follow Jepsen so that
// histories can be converted to and from Jepsen/Elle tooling.
package history

import (
	"encoding/json"
	"strconv"
)

// Type is the outcome of an operation: invoke opens it, and exactly one of
// ok (it happened), fail (it certainly did not happen) or info (unknown)
// completes it. In a history it is a string; in memory a byte, so that
// the events of a ten-million-line history fit in memory (docs/checker.md
// "Speed"). The zero Type is no type: no decoded event has it.
type Type uint8

// Operation types.
const (
	Invoke Type = iota + 1
	OK
	Fail
	Info
)

// typeNames are the Types' names in the history, by value.
var typeNames = [...]string{Invoke: "invoke", OK: "ok", Fail: "fail", Info: "info"}

// String is the type's name in a history ("" for the zero Type).
func (t Type) String() string { return nameOf(typeNames[:], t) }

// MarshalText writes the type's name, so that encoding/json writes a
// Type as the contract's string.
func (t Type) MarshalText() ([]byte, error) { return marshalName(typeNames[:], t, "type") }

// UnmarshalText reads a type's name; any other is an error naming the
// valid ones.
func (t *Type) UnmarshalText(b []byte) error {
	return unmarshalName(typeNames[:], t, b, "type", validTypes)
}

// Function is an operation's `f`: what was done (acquire, release, a
// fault...). Like Type, a string in a history and a byte in memory; the
// zero Function is none.
type Function uint8

// Function names (the `f` field).
const (
	FAcquire Function = iota + 1
	FRelease
	FRead
	FWrite
	FCrash
	FPause
	FResume
	FLeaseLost
	FWakeup
	FFault
	// FRPCs is an extension: one ok event per process at the end of a run,
	// value = the etcd RPCs that client sent (herd figures).
	FRPCs
	// FKeyDeleted is an extension: the harness watched a lock key (a
	// grant's or a waiter's) being deleted. Process NemesisProcess, type ok,
	// token = the deleted key's create revision (a grant's token), value =
	// KeyDeletion. It lets the checker see what no client reported: a
	// holder's key removed by someone else, or by its lease's expiry.
	FKeyDeleted
	// FClock is an extension a merge of several workers' histories writes
	// (one run driven from several machines): process NemesisProcess,
	// type ok, value = ClockValue, once per worker. Each worker's times
	// were shifted onto the reference worker's clock by an offset known
	// only within an uncertainty, so the exclusion check calls an overlap
	// of two processes certain only when it is longer than their
	// uncertainties together.
	FClock
	// FLeaseOp is an extension: something a client's connection saw of
	// one of its leases (process NemesisProcess, so that no check takes
	// it for a step of the client's; type ok; value = LeaseOp, naming the
	// client):
	// a grant or a renewal answered, an answer saying the lease is gone,
	// a revoke sent. The expiry check reads it: what etcd promised of
	// each lease, and when the client stopped keeping it.
	FLeaseOp
	// FKeyOp is an extension: the harness watched a key under the run's
	// prefix, created under a client's lease, being created or deleted
	// (process NemesisProcess, type ok, value = KeyOp). The expiry and
	// orphans checks read it: which keys each client's lease kept, and
	// when they went.
	FKeyOp
)

// functionNames are every valid `f`, the contract's and the extensions the
// recorder and the harness write, in the order messages list them. The
// decoder refuses any other: a misspelt "aquire" would otherwise be an
// event no check reads, and the history would pass having been checked
// for nothing.
var functionNames = [...]string{FAcquire: "acquire", FRelease: "release", FRead: "read",
	FWrite: "write", FCrash: "crash", FPause: "pause", FResume: "resume",
	FLeaseLost: "lease-lost", FWakeup: "wakeup", FFault: "fault", FRPCs: "rpcs",
	FKeyDeleted: "key-deleted", FClock: "clock", FLeaseOp: "lease-op", FKeyOp: "key-op"}

// String is the function's name in a history ("" for the zero Function).
func (f Function) String() string { return nameOf(functionNames[:], f) }

// MarshalText writes the function's name, so that encoding/json writes a
// Function as the contract's string.
func (f Function) MarshalText() ([]byte, error) { return marshalName(functionNames[:], f, "f") }

// UnmarshalText reads a function's name; any other is an error naming the
// valid ones.
func (f *Function) UnmarshalText(b []byte) error {
	return unmarshalName(functionNames[:], f, b, "f", validFs)
}

// ClockValue is the value of an FClock event: the processes a worker
// drove, the offset its times were shifted by (added to its own clock's
// readings) and the uncertainty of that offset, in nanoseconds.
type ClockValue struct {
	Worker        string `json:"worker"`
	Processes     []int  `json:"processes"`
	OffsetNS      int64  `json:"offset_ns"`
	UncertaintyNS int64  `json:"uncertainty_ns"`
}

// Causes of a KeyDeletion.
const (
	// CauseDelete: the key's lease was still alive after the delete, so a
	// client deleted it.
	CauseDelete = "delete"
	// CauseLease: the key's lease was gone (expired or revoked), which
	// deletes every key under it.
	CauseLease = "lease"
)

// KeyDeletion is the Value of a key-deleted event.
type KeyDeletion struct {
	// Revision is the revision of the delete.
	Revision int64 `json:"revision"`
	// Cause is CauseDelete or CauseLease.
	Cause string `json:"cause"`
	// BeforeGrant says the harness saw this delete before the holder's
	// acquire returned: the lock granted a key that no longer existed
	// (etcd's Election.Campaign does, for a campaigner whose lease ended
	// while it waited). Such an event is recorded at the grant, not at the
	// delete. Absent: the delete came after the grant, or its order is
	// unknown.
	BeforeGrant bool `json:"before_grant,omitempty"`
	// Waiter, when set, is the client process that was waiting for the
	// lock under the deleted key's lease (its key in the queue), not a
	// holder: the event's token is then 0 (the key's create revision is
	// not known) and only the lease check's "waiting after lease loss"
	// reads it (etcd #19597: a waiter whose lease ended should stop
	// waiting). Absent: the key was a holder's.
	Waiter *int `json:"waiter,omitempty"`
	// Owner, when set, is the client process whose queue key this was,
	// for a key neither held nor waited on: a crashed client's, which its
	// lease's end deleted. No check judges it; it explains what followed
	// (a waiter that watched that key taking the lock while an older key
	// still stood).
	Owner *int `json:"owner,omitempty"`
	// Lease is the deleted key's lease ID in hex, when it had one: the
	// expiry check matches a deletion its lease's end caused with that
	// lease's renewals (FLeaseOp). Absent in older histories.
	Lease string `json:"lease,omitempty"`
}

// What a LeaseOp or a KeyOp saw.
const (
	// LeaseGrant: a lease was granted; TTLNS is its TTL.
	LeaseGrant = "grant"
	// LeaseRenew: a renewal was answered with the lease alive; TTLNS is
	// the TTL the answer gave it, SentNS when its request was sent.
	LeaseRenew = "renew"
	// LeaseGone: a renewal was answered saying the lease no longer exists.
	LeaseGone = "gone"
	// LeaseRevoke: the client sent a revoke of the lease (the event's time).
	LeaseRevoke = "revoke"
	// KeyCreate and KeyDelete: a key was created, or deleted.
	KeyCreate = "create"
	KeyDelete = "delete"
)

// LeaseOp is the value of an FLeaseOp event. The event's time is when the
// answer arrived (a revoke: when it was sent).
type LeaseOp struct {
	Op string `json:"op"`
	// Owner is the client whose connection saw it.
	Owner int `json:"owner"`
	// Lease is the lease ID in hex.
	Lease string `json:"lease"`
	// TTLNS is the lease's TTL in nanoseconds (grant, renew).
	TTLNS int64 `json:"ttl_ns,omitempty"`
	// SentNS is when the answered request was sent (history time): etcd
	// renewed the lease at or after it, so the lease lasts at least a TTL
	// from it.
	SentNS int64 `json:"sent_ns,omitempty"`
}

// KeyOp is the value of an FKeyOp event. The event's time is when the
// harness's watch saw the change, its lock the lock the key is of.
type KeyOp struct {
	Op string `json:"op"`
	// Revision is the change's: the create's, or the delete's.
	Revision int64 `json:"revision"`
	// Created is a deleted key's create revision (its create event's
	// Revision): with Lease, it names the key.
	Created int64 `json:"created,omitempty"`
	// Owner is the client whose lease the key was created under.
	Owner int `json:"owner"`
	// Lease is that lease's ID in hex.
	Lease string `json:"lease"`
}

// NemesisProcess is the process id of fault events.
const NemesisProcess = -1

// Event is one line of a history. Lock, Token, Value and Error are optional
// in the contract; Key and Lease are diagnostics the recorder adds and the
// checker never relies on, so that hand-written histories check the same.
type Event struct {
	// Time is nanoseconds since the run's start on a monotonic clock.
	Time int64 `json:"time"`
	// Process is the client id (≥0), or NemesisProcess for faults.
	Process int32    `json:"process"`
	Type    Type     `json:"type"`
	F       Function `json:"f"`
	Lock    string   `json:"lock,omitempty"`
	// Token is the fencing token on acquire ok and on write.
	Token int64 `json:"token,omitempty"`
	// Revision orders a release before a grant where clocks cannot (a
	// history merged from workers' clocks): the store's revisions are
	// one order for every client. On an acquire's ok it is the highest
	// revision any answer the client's connection received carried
	// before the grant was recorded: that revision was committed before
	// the grant. On a release's ok or info it is the highest revision
	// created by a write (a put, or a delete that deleted) the
	// connection sent after the release's invoke: committed after the
	// hold ended. Absent (0): not known (a backend without revisions, an
	// older history).
	Revision int64 `json:"revision,omitempty"`
	// Value is the resource value (read/write) or the fault description.
	Value json.RawMessage `json:"value,omitempty"`
	Error string          `json:"error,omitempty"`
	// Key is the etcd key of a grant (diagnostic only).
	Key string `json:"key,omitempty"`
	// Lease is the etcd lease ID of a grant in hex (diagnostic only).
	Lease string `json:"lease,omitempty"`
}

// IntValue encodes an integer resource value for Event.Value.
func IntValue(v int64) json.RawMessage {
	return json.RawMessage(strconv.AppendInt(nil, v, 10))
}

// ParseInt decodes an integer Event.Value; ok is false when the value is
// absent or not an integer.
func ParseInt(v json.RawMessage) (n int64, ok bool) {
	if len(v) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err == nil {
		return n, true
	}
	var f float64
	if json.Unmarshal(v, &f) == nil && f == float64(int64(f)) {
		return int64(f), true
	}
	return 0, false
}

// Fault is the Value of a `fault` event: which fault, on what, and (on the
// invoke) for how long it is meant to last.
type Fault struct {
	Fault  string `json:"fault"`
	Target string `json:"target,omitempty"`
	// Resolved names the concrete member or client the target resolved to.
	Resolved string `json:"resolved,omitempty"`
	// ForNS is the planned duration in nanoseconds, 0 if instantaneous or
	// ended by another step.
	ForNS int64 `json:"for_ns,omitempty"`
	// ArgNS is the step's parameter in nanoseconds (its delay, every or
	// by: how far clock-jump moved the clock), 0 when it takes none.
	// Added later, additive: older histories have none.
	ArgNS int64 `json:"arg_ns,omitempty"`
	// On names the call that struck a step timed to one (a scenario
	// step's on): the call and its client, "release client:3". Added
	// later, additive: absent for a fault struck by the clock.
	On string `json:"on,omitempty"`
}

// DeletionValue encodes d for Event.Value.
func DeletionValue(d KeyDeletion) json.RawMessage { return mustMarshal(d) }

// LeaseOpValue encodes l for Event.Value.
func LeaseOpValue(l LeaseOp) json.RawMessage { return mustMarshal(l) }

// KeyOpValue encodes k for Event.Value.
func KeyOpValue(k KeyOp) json.RawMessage { return mustMarshal(k) }

// mustMarshal encodes a struct of strings and ints, which always marshals.
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// FaultValue encodes f for Event.Value.
func FaultValue(f Fault) json.RawMessage { return mustMarshal(f) }
