package check

import (
	"cmp"
	"github.com/lockbench/lockbench/internal/hugepage"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lockbench/lockbench/history"
)

// Operation codes: the `f` of an event, classified once (opOf).
const (
	opOther uint8 = iota
	opAcquire
	opRelease
	opRead
	opWrite
	opCrash
	opPause
	opResume
	opLeaseLost
	opWakeup
	opFault
	opRPCs
	opKeyDeleted
	opClock
	opLeaseOp
	opKeyOp
)

// Type codes: the `type` of an event.
const (
	tyInvoke uint8 = iota
	tyOK
	tyFail
	tyInfo
	tyOther // not a contract type; ignored by every check
)

// opOf is f's operation code. The codes are history's Function values
// (TestOpCodesAreFunctions), so this only folds the zero Function and any
// value past the contract's into opOther.
func opOf(f history.Function) uint8 {
	if f > history.FKeyOp {
		return opOther
	}
	return uint8(f)
}

func typeOf(t history.Type) uint8 {
	switch t {
	case history.Invoke:
		return tyInvoke
	case history.OK:
		return tyOK
	case history.Fail:
		return tyFail
	case history.Info:
		return tyInfo
	}
	return tyOther
}

// clientOp reports whether op is one of a client's operations, of which a
// process has at most one in flight (invoke … ok/fail/info).
func clientOp(op uint8) bool { return op >= opAcquire && op <= opWrite }

func completion(ty uint8) bool { return ty == tyOK || ty == tyFail || ty == tyInfo }

// possRec is an acquire of unknown outcome (info, or cut short by a crash
// or another invoke): the lock may have been held from start to end.
type possRec struct {
	start int32 // the acquire invoke, or the info itself when it has none
	end   int32 // the process's next event after the outcome; -1: history end
}

// prepared is a compact, time-ordered index of a history that every check
// walks. Building it is the only pass that looks at strings.
type prepared struct {
	ev  []history.Event
	ord []int32 // time order (ties by line); nil when ev is already in order
	// code is op<<3 | type, per event.
	code []uint8
	// slot is the (process, lock) pair of each event. A completion without
	// a lock takes its invoke's; a release, read or write without one
	// takes the lock of the process's last acquire that named one
	// (docs/design.md §3: lock is optional).
	slot []int32
	// pair, on a client-op invoke, is the event that ended it (completion,
	// crash, or the process's next invoke); -1 if none did.
	pair []int32
	// ended, on any event, is the client-op invoke that event ended; -1.
	ended []int32

	procs    []int    // raw process id by process index
	locks    []string // lock name by lock index
	slotProc []int32
	slotLock []int32
	noLock   int32 // index of lock "" or -1
	poss     []possRec
	nAcq     []int32 // acquire events per lock
	nGrant   []int32 // acquire ok events per lock
	endTime  int64   // time of the last event in time order

	ws     *writeScan // memoized by writes
	held   []Hold     // memoized by holds
	paired *Ops       // memoized by ops
	// faults is memoized by faultOps: the lease check asks for it once
	// per process, and each pass reads every event.
	faults *Ops
	// effects memoizes faultEffects(faults): it decodes each fault's
	// value, and the lease check asks once per process.
	effects     []faultEffect
	effectsOnce sync.Once
	// clk memoizes readClocks: exclusion and fencing both read it.
	clk     *clocks
	clkOnce sync.Once
	// dels, delsSeen and delsDone memoize deletionsUnderHolders; excuses
	// memoizes leaseExcused per process and recovery bound.
	dels     []deletion
	delsSeen bool
	delsDone bool
	excuses  map[[2]int64][]window
	// lk memoizes leaseKeys: expiry and orphans both read it.
	lk     *leaseKeys
	lkOnce sync.Once
	// relOnce memoizes releaseLatency in relMedian and relLongest.
	relOnce               sync.Once
	relMedian, relLongest int64
	// excusesMu guards excuses: fairness reads it beside lease and
	// resource (Check).
	excusesMu sync.Mutex
}

func (p *prepared) n() int { return len(p.ev) }

// has reports whether any event is of operation op.
func (p *prepared) has(op uint8) bool {
	for i := range p.n() {
		if p.op(i) == op {
			return true
		}
	}
	return false
}

// at is the event index of the k-th event in time order.
func (p *prepared) at(k int) int {
	if p.ord != nil {
		return int(p.ord[k])
	}
	return k
}

func (p *prepared) op(i int) uint8 { return p.code[i] >> 3 }
func (p *prepared) ty(i int) uint8 { return p.code[i] & 7 }

func (p *prepared) lockOf(i int) int32 { return p.slotLock[p.slot[i]] }
func (p *prepared) procOf(i int) int32 { return p.slotProc[p.slot[i]] }

// outcome of the client-op invoke inv.
func (p *prepared) outcome(inv int) Outcome {
	j := p.pair[inv]
	if j < 0 {
		return OutcomePending
	}
	if p.op(int(j)) != p.op(inv) {
		return OutcomeAborted
	}
	return outcomeOfType(p.ty(int(j)))
}

// outcomeOfType is the outcome a completion of type ty reports.
func outcomeOfType(ty uint8) Outcome {
	switch ty {
	case tyOK:
		return OutcomeOK
	case tyFail:
		return OutcomeFail
	case tyInfo:
		return OutcomeInfo
	}
	return OutcomeAborted
}

// interner maps processes, locks and (process, lock) pairs to dense
// indices, with fast paths for the common shapes (small process ids, one
// lock name repeated).
type interner struct {
	p       *prepared
	procTab []int32 // process id+1 → index+1, for small ids
	procMap map[int]int32
	lockMap map[string]int32
	lastL   string
	lastLID int32
	// per process: the slot of its last lock, and a map for the rest
	procLastLock []int32
	procLastSlot []int32
	slotMap      map[uint64]int32
	// per process: the lock of its last acquire that named one, or -1
	procAcqLock []int32
}

const smallProc = 1 << 16

func (in *interner) proc(id int) int32 {
	if id >= -1 && id < smallProc-1 {
		k := id + 1
		if k < len(in.procTab) && in.procTab[k] != 0 {
			return in.procTab[k] - 1
		}
		x := in.newProc(id)
		if k >= len(in.procTab) {
			in.procTab = append(in.procTab, make([]int32, k+1-len(in.procTab))...)
		}
		in.procTab[k] = x + 1
		return x
	}
	if x, ok := in.procMap[id]; ok {
		return x
	}
	if in.procMap == nil {
		in.procMap = map[int]int32{}
	}
	x := in.newProc(id)
	in.procMap[id] = x
	return x
}

func (in *interner) newProc(id int) int32 {
	x := int32(len(in.p.procs))
	in.p.procs = append(in.p.procs, id)
	in.procLastLock = append(in.procLastLock, -1)
	in.procLastSlot = append(in.procLastSlot, -1)
	in.procAcqLock = append(in.procAcqLock, -1)
	return x
}

func (in *interner) lock(name string) int32 {
	if in.lastLID >= 0 && name == in.lastL {
		return in.lastLID
	}
	x, ok := in.lockMap[name]
	if !ok {
		x = int32(len(in.p.locks))
		in.p.locks = append(in.p.locks, name)
		in.p.nAcq = append(in.p.nAcq, 0)
		in.p.nGrant = append(in.p.nGrant, 0)
		in.lockMap[name] = x
		if name == "" {
			in.p.noLock = x
		}
	}
	in.lastL, in.lastLID = name, x
	return x
}

func (in *interner) slot(pi, li int32) int32 {
	if in.procLastLock[pi] == li {
		return in.procLastSlot[pi]
	}
	k := uint64(uint32(pi))<<32 | uint64(uint32(li))
	s, ok := in.slotMap[k]
	if !ok {
		s = int32(len(in.p.slotProc))
		in.p.slotProc = append(in.p.slotProc, pi)
		in.p.slotLock = append(in.p.slotLock, li)
		in.slotMap[k] = s
	}
	in.procLastLock[pi], in.procLastSlot[pi] = li, s
	return s
}

// pairings counts the histories this process has indexed (see Pairings).
var pairings atomic.Int64

// Pairings is how many histories this process has paired so far (by Check
// or Pair). A run pairs its history once and hands the Checked value on;
// a test counts this to keep it so, since a second pairing of a large
// history costs as much as the check itself.
func Pairings() int64 { return pairings.Load() }

// prepare indexes events in one pass (plus a sort if they are out of time
// order). Memory: about 17 bytes per event, 21 when a sort is needed.
func prepare(events []history.Event) *prepared {
	pairings.Add(1)
	n := len(events)
	p := &prepared{
		ev:     events,
		code:   hugepage.Make[uint8](n, n),
		slot:   hugepage.Make[int32](n, n),
		pair:   hugepage.Make[int32](n, n),
		ended:  hugepage.Make[int32](n, n),
		noLock: -1,
	}
	p.ord = timeOrder(events)
	if n > 0 {
		p.endTime = events[p.at(n-1)].Time
	}
	in := &interner{p: p, lockMap: map[string]int32{}, slotMap: map[uint64]int32{}, lastLID: -1}
	var pend []int32    // per process: its client-op invoke in flight, -1
	var armed [][]int32 // per process: poss records its next event ends
	for k := 0; k < n; k++ {
		i := p.at(k)
		e := &events[i]
		op, ty := opOf(e.F), typeOf(e.Type)
		p.code[i] = op<<3 | ty
		pi := in.proc(int(e.Process))
		li := in.lock(e.Lock)
		switch {
		case e.Lock == "":
			// A release, read or write that names no lock is of the lock
			// the process last asked for: without this, a history whose
			// releases carry no lock name (Jepsen's often do not) would
			// never end a hold.
			if (op == opRelease || op == opRead || op == opWrite) && in.procAcqLock[pi] >= 0 {
				li = in.procAcqLock[pi]
			}
		case op == opAcquire:
			in.procAcqLock[pi] = li
		}
		s := in.slot(pi, li)
		p.slot[i] = s
		p.pair[i], p.ended[i] = -1, -1
		if op == opAcquire {
			p.nAcq[li]++
			if ty == tyOK {
				p.nGrant[li]++
			}
		}
		if e.Process < 0 {
			continue
		}
		for int(pi) >= len(pend) {
			pend = append(pend, -1)
			armed = append(armed, nil)
		}
		// An acquire of unknown outcome may hold the lock until the
		// process's next event (other than another acquire's outcome).
		if len(armed[pi]) > 0 && !(op == opAcquire && completion(ty)) {
			for _, r := range armed[pi] {
				p.poss[r].end = int32(i)
			}
			armed[pi] = armed[pi][:0]
		}
		abort := func() {
			q := pend[pi]
			if q < 0 {
				return
			}
			p.pair[q], p.ended[i] = int32(i), q
			pend[pi] = -1
			if p.op(int(q)) == opAcquire {
				p.poss = append(p.poss, possRec{start: q, end: int32(i)})
			}
		}
		switch {
		case clientOp(op) && ty == tyInvoke:
			abort()
			pend[pi] = int32(i)
		case clientOp(op) && completion(ty):
			q := pend[pi]
			if q >= 0 && p.op(int(q)) == op && (e.Lock == "" || li == p.lockOf(int(q))) {
				p.pair[q], p.ended[i] = int32(i), q
				pend[pi] = -1
				p.slot[i] = p.slot[q]
			} else {
				q = -1
			}
			if op == opAcquire && ty == tyInfo {
				start := int32(i)
				if q >= 0 {
					start = q
				}
				armed[pi] = append(armed[pi], int32(len(p.poss)))
				p.poss = append(p.poss, possRec{start: start, end: -1})
			}
		case op == opCrash:
			abort()
		}
	}
	return p
}

// timeOrder returns the event indices in time order, ties in line order;
// nil when events are already in that order (a recorder's history).
func timeOrder(events []history.Event) []int32 {
	for i := 1; i < len(events); i++ {
		if events[i].Time >= events[i-1].Time {
			continue
		}
		ord := hugepage.Make[int32](len(events), len(events))
		for j := range ord {
			ord[j] = int32(j)
		}
		slices.SortFunc(ord, func(a, b int32) int {
			return cmp.Or(cmp.Compare(events[a].Time, events[b].Time), cmp.Compare(a, b))
		})
		return ord
	}
	return nil
}

// lockOrder returns lock indices sorted by name.
func (p *prepared) lockOrder() []int32 {
	ids := make([]int32, len(p.locks))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(a, b int32) int { return cmp.Compare(p.locks[a], p.locks[b]) })
	return ids
}

// fenwick counts, per position, and answers prefix sums: O(log n) each.
type fenwick []int32

func (f fenwick) add(i int) { // 0-based
	for i++; i < len(f); i += i & -i {
		f[i]++
	}
}

func (f fenwick) prefix(i int) int { // sum over [0, i]
	s := 0
	for i++; i > 0; i -= i & -i {
		s += int(f[i])
	}
	return s
}
