package bench

import (
	"encoding/binary"
	"testing"
	"time"
)

func TestParseVmHWM(t *testing.T) {
	st := "Name:\tlockbench\nVmPeak:\t 2000000 kB\nVmHWM:\t  524288 kB\nVmRSS:\t  100000 kB\n"
	if got := parseVmHWM(st); got != 512 {
		t.Errorf("VmHWM %v MB, want 512", got)
	}
	if got := parseVmHWM("Name: x\n"); got != 0 {
		t.Errorf("no VmHWM: %v", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	// comm with a space and a parenthesis; utime 250, stime 50 ticks.
	st := "4242 (lock bench)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 0 0"
	if got := parseStatCPU(st, 100); got != 3*time.Second {
		t.Errorf("cpu %v at 100 Hz, want 3s", got)
	}
	if got := parseStatCPU(st, 250); got != 1200*time.Millisecond {
		t.Errorf("cpu %v at 250 Hz, want 1.2s", got)
	}
	if got := parseStatCPU("garbage", 100); got != 0 {
		t.Errorf("garbage: %v", got)
	}
	if got := parseStatCPU(st, 0); got != 0 {
		t.Errorf("no clock tick: %v", got)
	}
	if processCPU() < 0 {
		t.Error("negative CPU time")
	}
}

// auxv builds an auxiliary vector of (type, value) pairs.
func auxv(order binary.ByteOrder, pairs ...uint64) []byte {
	b := make([]byte, 8*len(pairs))
	for i, v := range pairs {
		order.PutUint64(b[8*i:], v)
	}
	return b
}

func TestParseAuxvClockTick(t *testing.T) {
	for _, tc := range []struct {
		name  string
		auxv  []byte
		order binary.ByteOrder
		want  int64
		ok    bool
	}{
		{"among others", auxv(binary.LittleEndian, 6, 4096, atClkTck, 250, 0, 0), binary.LittleEndian, 250, true},
		{"big-endian", auxv(binary.BigEndian, 3, 64, atClkTck, 1000, 0, 0), binary.BigEndian, 1000, true},
		{"after AT_NULL", auxv(binary.LittleEndian, 0, 0, atClkTck, 250), binary.LittleEndian, 0, false},
		{"missing", auxv(binary.LittleEndian, 6, 4096, 0, 0), binary.LittleEndian, 0, false},
		{"zero", auxv(binary.LittleEndian, atClkTck, 0, 0, 0), binary.LittleEndian, 0, false},
		{"truncated", auxv(binary.LittleEndian, atClkTck, 100)[:12], binary.LittleEndian, 0, false},
		{"empty", nil, binary.LittleEndian, 0, false},
	} {
		got, ok := parseAuxvClockTick(tc.auxv, tc.order)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if hz := clockTick(); hz <= 0 {
		t.Errorf("clock tick %d", hz)
	}
}
