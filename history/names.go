package history

import (
	"fmt"
	"strings"
)

// nameOf is the name of code c in names ("" for the zero code or one out
// of range, which only a broken invariant makes).
func nameOf[C ~uint8](names []string, c C) string {
	if int(c) < len(names) {
		return names[c]
	}
	return ""
}

// marshalName writes c's name; the zero code writes "" (an Event built
// in memory without a type or f writes what it did when they were
// strings), a code out of range is an error.
func marshalName[C ~uint8](names []string, c C, field string) ([]byte, error) {
	if int(c) >= len(names) {
		return nil, fmt.Errorf("%s %d is not a known code", field, c)
	}
	return []byte(names[c]), nil
}

// unmarshalName sets *c to the code that b names.
func unmarshalName[C ~uint8](names []string, c *C, b []byte, field, valid string) error {
	for k, n := range names {
		if k > 0 && n == string(b) {
			*c = C(k)
			return nil
		}
	}
	return fmt.Errorf("%s %q is not one of %s", field, b, valid)
}

// joinNames lists the names of every code but the zero one, for messages.
func joinNames(names []string) string {
	return strings.Join(names[1:], ", ")
}
