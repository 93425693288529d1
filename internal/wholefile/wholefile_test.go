package wholefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs fn and fails the test if it does not return within 2 s
// (a FIFO with no writer blocks an open or read that waits for one).
func within[T any](t *testing.T, fn func() (T, error)) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := fn(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(2 * time.Second):
		t.Fatal("blocked: still reading after 2s")
	}
	panic("unreachable")
}

func TestReadRefusesWhatIsNotARegularFileWithinTheLimit(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "s.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, ScenarioLimit+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{fifo, []string{"scenario " + fifo, "a named pipe (FIFO), not a regular file", "at most 1 MiB"}},
		{link, []string{"scenario " + link, "a named pipe (FIFO)"}},
		{big, []string{"scenario " + big, "1048577 bytes, over the limit", "at most 1 MiB"}},
		{dir, []string{"scenario " + dir, "a folder, not a regular file"}},
		{"/dev/zero", []string{"scenario /dev/zero", "a character device, not a regular file"}},
	} {
		if _, err := os.Stat(tc.path); err != nil {
			t.Logf("skip %s: %v", tc.path, err)
			continue
		}
		_, err := within(t, func() ([]byte, error) { return Read(tc.path, "scenario", ScenarioLimit) })
		if !IsRefused(err) {
			t.Errorf("Read(%s) = %v, want a *wholefile.Error", tc.path, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Read(%s): %q does not say %q", tc.path, err, w)
			}
		}
	}
	// Check refuses the same, for streaming readers.
	if err := Check(fifo, "history", HistoryLimit); !IsRefused(err) || !strings.Contains(err.Error(), "at most 4 GiB") {
		t.Errorf("Check(fifo) = %v", err)
	}
}

func TestReadReadsARegularFileUpToTheLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ok.yaml")
	want := strings.Repeat("x", 100)
	if err := os.WriteFile(p, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(p, "scenario", 100); err != nil || string(b) != want {
		t.Errorf("Read at the limit = %d bytes, %v", len(b), err)
	}
	if _, err := Read(p, "scenario", 99); !IsRefused(err) || !strings.Contains(err.Error(), "100 bytes, over the limit") {
		t.Errorf("Read over the limit = %v", err)
	}
	link := filepath.Join(dir, "link.yaml")
	os.Symlink(p, link)
	if b, err := Read(link, "scenario", 100); err != nil || string(b) != want {
		t.Errorf("Read through a symlink = %d bytes, %v", len(b), err)
	}
	if _, err := Read(filepath.Join(dir, "nope"), "scenario", 100); !errors.Is(err, fs.ErrNotExist) || IsRefused(err) {
		t.Errorf("Read of a missing file = %v, want fs.ErrNotExist", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{300: "300 B", 1 << 20: "1 MiB", 5 << 19: "2.5 MiB", 256 << 20: "256 MiB", 4 << 30: "4 GiB", 2048: "2 KiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheckMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.jsonl")
	err := Check(path, "history", 1<<20)
	var pe *fs.PathError
	if err == nil || err.Error() != "history "+path+": no such file" || !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
		t.Errorf("Check of a missing file: %v", err)
	}
}
