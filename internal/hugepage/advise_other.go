//go:build !linux

package hugepage

// Make is make([]T, n, c): madvise's huge pages do not exist here.
func Make[T any](n, c int) []T { return make([]T, n, c) }
