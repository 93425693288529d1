package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestMakeIsMake: whatever the advice, Make's slice is make's: its length,
// capacity and zeroed, writable elements, below and above the size that
// is advised.
func TestMakeIsMake(t *testing.T) {
	for _, c := range []int{0, 1, 1000, 9 * size / 8} {
		s := Make[int64](c/2, c)
		if len(s) != c/2 || cap(s) != c {
			t.Fatalf("Make(%d, %d): len %d cap %d", c/2, c, len(s), cap(s))
		}
		s = s[:c]
		for i := range s {
			if s[i] != 0 {
				t.Fatalf("Make(%d, %d)[%d] = %d, not zero", c/2, c, i, s[i])
			}
			s[i] = int64(i)
		}
	}
}

// TestLargeSliceIsAdvised: on Linux with transparent huge pages not off,
// the mapping under a large slice carries the kernel's "hg" flag
// (MADV_HUGEPAGE), as /proc/self/smaps shows it.
func TestLargeSliceIsAdvised(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("madvise huge pages are Linux's")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v)", mode, err)
	}
	s := Make[byte](0, 16*size)
	at := uintptr(unsafe.Pointer(unsafe.SliceData(s))) + 8*size
	flags, err := vmFlags(at)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the mapping at %#x is not advised: VmFlags %q", at, flags)
	}
	runtime.KeepAlive(s)
}

// vmFlags is the VmFlags line of the /proc/self/smaps mapping holding addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.TrimSpace(rest), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping holds %#x", addr)
}
