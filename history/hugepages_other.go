//go:build !linux

package history

// adviseHugePages does nothing where madvise's huge pages do not exist.
func adviseHugePages([]Event) {}
