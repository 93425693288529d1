//go:build !unix

package owned

import "os"

// lockFile does nothing where flock does not exist: ownership then rests on
// the pid alone.
func lockFile(*os.File) error { return nil }

// lockHeld cannot tell without flock: a folder whose pid is dead counts as
// unheld.
func lockHeld(string) bool { return false }

// pidAlive cannot probe a process here without more machinery: every owner
// counts as alive, so nothing is removed as stale.
func pidAlive(int) bool { return true }
