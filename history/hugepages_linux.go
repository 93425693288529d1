package history

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of an x86-64 and arm64 transparent huge page.
const hugePage = 2 << 20

// adviseHugePages asks the kernel to back the aligned middle of a large
// fresh event slice with 2 MB pages (madvise MADV_HUGEPAGE), before any of
// it is touched. Why: the events of a 10M-event history are 1.4 GB, and
// their first writes fault in one 4 KB page at a time; on this project's
// VM, where the kernel's transparent huge pages are "madvise", those
// 350,000 faults were most of ReadFile's system time (docs/checker.md
// "Speed"). The advice is only advice: where huge pages are off, or the
// memory was already touched, it changes nothing, and its error is
// ignored.
func adviseHugePages(events []Event) {
	size := uintptr(len(events)) * unsafe.Sizeof(Event{})
	if size < 8*hugePage {
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(events))
	skip := (hugePage - uintptr(base)%hugePage) % hugePage
	n := (size - skip) &^ (hugePage - 1)
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, skip)), n), syscall.MADV_HUGEPAGE)
}
