package bench

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What the benchmark reads of its own process from Linux's /proc: CPU time
// (for the recording comparison) and the peak resident set (per cell).
// Elsewhere these read nothing and give 0, which the figures treat as
// "not measured".

const (
	// atClkTck is AT_CLKTCK, the auxiliary vector's entry holding the
	// clock tick (USER_HZ): the unit of utime and stime in /proc/PID/stat.
	atClkTck = 17
	// defaultClockTick is USER_HZ on nearly every Linux, for when the
	// auxiliary vector cannot be read.
	defaultClockTick = 100
	// rssResetUnsupportedMB is the peak RSS reported where it cannot be
	// read.
	rssResetUnsupportedMB = 0
)

// clockTick is this process's clock tick, read once.
var clockTick = sync.OnceValue(func() int64 {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return defaultClockTick
	}
	if hz, ok := parseAuxvClockTick(b, binary.NativeEndian); ok {
		return hz
	}
	return defaultClockTick
})

// parseAuxvClockTick finds AT_CLKTCK in an auxiliary vector: pairs of
// 64-bit words (type, value) in the machine's byte order, ended by type 0.
func parseAuxvClockTick(auxv []byte, order binary.ByteOrder) (int64, bool) {
	for i := 0; i+16 <= len(auxv); i += 16 {
		typ, val := order.Uint64(auxv[i:]), order.Uint64(auxv[i+8:])
		switch typ {
		case 0: // AT_NULL: the end
			return 0, false
		case atClkTck:
			if val == 0 || val > 1e6 {
				return 0, false
			}
			return int64(val), true
		}
	}
	return 0, false
}

// processCPU is the process's user + system CPU time from /proc/self/stat;
// 0 where it cannot be read.
func processCPU() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	return parseStatCPU(string(b), clockTick())
}

// parseStatCPU reads utime + stime, in ticks of hz per second, from a
// /proc/PID/stat line.
func parseStatCPU(stat string, hz int64) time.Duration {
	if hz <= 0 {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted after its last ")". utime and stime are fields 14, 15.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * time.Second / time.Duration(hz)
}

// resetPeakRSS resets VmHWM by writing 5 to /proc/self/clear_refs (Linux
// ≥ 4.0), so that each cell's peak is its own; elsewhere it does nothing.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSSMB is the process's peak resident set (VmHWM) in MB.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return rssResetUnsupportedMB
	}
	return parseVmHWM(string(b))
}

// parseVmHWM reads "VmHWM:  123456 kB" from a /proc status file, in MB.
func parseVmHWM(status string) float64 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err == nil {
					return round1(kb / 1024)
				}
			}
		}
	}
	return 0
}
