// Package hugepage asks the kernel for 2 MB pages under the few slices
// of a large history that are made once at their size and filled at once
// (the decoded events, the checker's indexes and operation lists).
package hugepage

import (
	"syscall"
	"unsafe"
)

// size is the size of an x86-64 and arm64 transparent huge page.
const size = 2 << 20

// Make is make([]T, n, c) whose aligned middle, when it spans at least
// eight huge pages, the kernel is asked to back with 2 MB pages (madvise
// MADV_HUGEPAGE) before any of it is touched. Why: the events of a
// 10M-event history are 1.4 GB and the checker's lists another 1 GB;
// their first writes fault in one 4 KB page at a time, and on this
// project's VM, where transparent huge pages are "madvise", those faults
// were most of `lockbench check`'s system time (docs/checker.md "Speed").
// The advice is only advice: where huge pages are off, or the memory was
// already touched (a reused span), it changes nothing, and its error is
// ignored.
func Make[T any](n, c int) []T {
	s := make([]T, n, c)
	var zero T
	bytes := uintptr(c) * unsafe.Sizeof(zero)
	if bytes < 8*size {
		return s
	}
	base := unsafe.Pointer(unsafe.SliceData(s))
	skip := (size - uintptr(base)%size) % size
	m := (bytes - skip) &^ (size - 1)
	if m < 8*size {
		return s
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, skip)), m), syscall.MADV_HUGEPAGE)
	return s
}
