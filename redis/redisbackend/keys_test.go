package redisbackend

import "testing"

// TestGlobEscape: a prefix is matched as it is written, whatever SCAN's
// pattern language makes of its characters.
func TestGlobEscape(t *testing.T) {
	for in, want := range map[string]string{
		"/locktest/ab12/":   "/locktest/ab12/",
		"/a*b?/[x]":         `/a\*b\?/\[x\]`,
		`back\slash`:        `back\\slash`,
		"lockbench:lock:é*": `lockbench:lock:é\*`,
	} {
		if got := globEscape(in); got != want {
			t.Errorf("globEscape(%q) = %q, want %q", in, got, want)
		}
	}
}
