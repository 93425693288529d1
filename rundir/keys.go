package rundir

import (
	"encoding/json"
	"slices"
	"strconv"
)

// MissingKeys lists the object keys of the JSON document old that the
// document new lacks, at every depth, as dotted paths ("cluster.tick_ms";
// an array's elements are matched by position, "cells[0].lock"). The run
// folder's files are a contract: a test that re-encodes an old file and
// finds a key missing has found a change every reader would see. Both
// documents must parse; one that does not is reported as the key "".
func MissingKeys(old, new []byte) []string {
	var a, b any
	if json.Unmarshal(old, &a) != nil || json.Unmarshal(new, &b) != nil {
		return []string{""}
	}
	var out []string
	missingKeys("", a, b, &out)
	slices.Sort(out)
	return out
}

func missingKeys(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, _ := b.(map[string]any)
		for k, x := range av {
			p := k
			if path != "" {
				p = path + "." + k
			}
			y, ok := bv[k]
			if !ok {
				*out = append(*out, p)
				continue
			}
			missingKeys(p, x, y, out)
		}
	case []any:
		bv, _ := b.([]any)
		for i, x := range av {
			if i < len(bv) {
				missingKeys(path+"["+strconv.Itoa(i)+"]", x, bv[i], out)
			}
		}
	}
}
