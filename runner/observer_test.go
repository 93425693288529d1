package runner

import (
	"slices"
	"testing"

	"github.com/lockbench/lockbench/locks"
)

// TestHeldGrantsTakeDeleted: the first delete of a held grant's key name
// after the grant is its key's; a delete before the grant is of an earlier
// key of the name, and one after that first is of a key created since.
func TestHeldGrantsTakeDeleted(t *testing.T) {
	var h heldGrants
	a := &locks.Grant{Key: "/l/a", Token: 5}
	b := &locks.Grant{Key: "/l/b", Token: 7}
	c := &locks.Grant{Key: "/l/c", Token: 3} // two grants of one name: a buggy strategy
	d := &locks.Grant{Key: "/l/c", Token: 6}
	for _, g := range []*locks.Grant{a, b, c, d} {
		h.add(g)
	}
	h.done(b)
	for _, tc := range []struct {
		name string
		key  string
		rev  int64
		want []*locks.Grant
	}{
		{"an earlier key of the name", "/l/a", 4, nil},
		{"the grant's key", "/l/a", 9, []*locks.Grant{a}},
		{"a key of the name created since", "/l/a", 12, nil},
		{"a grant released", "/l/b", 10, nil},
		{"the older of two grants of one name", "/l/c", 5, []*locks.Grant{c}},
		{"then the newer", "/l/c", 8, []*locks.Grant{d}},
		{"a key never granted", "/l/x", 8, nil},
	} {
		if got := h.takeDeleted(tc.key, tc.rev); !slices.Equal(got, tc.want) {
			t.Errorf("%s: takeDeleted(%s, %d) = %v, want %v", tc.name, tc.key, tc.rev, got, tc.want)
		}
	}
	if len(h.byKey) != 0 {
		t.Errorf("grants left: %v", h.byKey)
	}
}
