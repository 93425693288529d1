package runner

import (
	"fmt"
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
		h.add(g, 100)
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
		if got := h.takeDeleted(tc.key, tc.rev, 200); !slices.Equal(got, tc.want) {
			t.Errorf("%s: takeDeleted(%s, %d) = %v, want %v", tc.name, tc.key, tc.rev, got, tc.want)
		}
	}
	if len(h.byKey) != 0 {
		t.Errorf("grants left: %v", h.byKey)
	}
}

// TestHeldGrantsGrantOfAGoneKey: a grant whose key the observer saw
// deleted before the grant's time is handed back, not held; a delete of an
// earlier key of the name, or one seen after the grant, is not its key's.
func TestHeldGrantsGrantOfAGoneKey(t *testing.T) {
	var h heldGrants
	h.takeDeleted("/l/a", 9, 100) // a waiter's key, its lease ended
	h.takeDeleted("/l/b", 4, 100) // an earlier key of the name
	h.takeDeleted("/l/c", 9, 300) // seen after the grant below
	for _, tc := range []struct {
		g    *locks.Grant
		gone bool
	}{
		{&locks.Grant{Key: "/l/a", Token: 5}, true},
		{&locks.Grant{Key: "/l/b", Token: 5}, false},
		{&locks.Grant{Key: "/l/c", Token: 5}, false},
		{&locks.Grant{Key: "/l/x", Token: 5}, false},
	} {
		d, gone := h.add(tc.g, 200)
		if gone != tc.gone || gone && d.rev != 9 {
			t.Errorf("add(%s) = %v, %v; want gone %v at revision 9", tc.g.Key, d, gone, tc.gone)
		}
		if _, held := h.byKey[tc.g.Key]; held == tc.gone {
			t.Errorf("add(%s): held %v, want %v", tc.g.Key, held, !tc.gone)
		}
	}
	for i := range maxGone + 1 {
		h.takeDeleted(fmt.Sprintf("/l/k%d", i), 50, 100)
	}
	if len(h.gone) != maxGone || len(h.goneOrder) != maxGone {
		t.Errorf("gone remembers %d (order %d), want at most %d", len(h.gone), len(h.goneOrder), maxGone)
	}
}
