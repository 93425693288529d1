package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzRead: no input makes Read panic; what it accepts satisfies the
// contract and survives Write → Read unchanged.
//
//	go test -run '^$' -fuzz FuzzRead ./history
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}
{"time":5,"process":0,"type":"ok","f":"acquire","lock":"l","token":12,"revision":14,"key":"l/1","lease":"7f"}
{"time":6,"process":-1,"type":"invoke","f":"fault","value":{"fault":"kill","target":"<leader>"}}`))
	f.Add([]byte(`{"time":1,"process":3,"type":"ok","f":"rpcs","value":null,"error":"\u2028&"}` + "\n\n"))
	f.Add([]byte(`{"time":9223372036854775807,"process":-1,"type":"info","f":"fault","value":[1, 2 ,{"a" : "b"}]}`))
	f.Add(readBench(12))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := Read(bytes.NewReader(data))
		if err != nil {
			if evs != nil {
				t.Fatalf("events with an error: %v", err)
			}
			return
		}
		for i, e := range evs {
			if e.Time < 0 || e.Process < NemesisProcess || e.F.String() == "" {
				t.Fatalf("event %d breaks the contract: %+v", i, e)
			}
			switch e.Type {
			case Invoke, OK, Fail, Info:
			default:
				t.Fatalf("event %d: type %q", i, e.Type)
			}
			if string(e.Value) == "null" {
				t.Fatalf("event %d: null value kept", i)
			}
		}
		var buf bytes.Buffer
		if err := Write(&buf, evs); err != nil {
			t.Fatalf("Write: %v", err)
		}
		again, err := Read(&buf)
		if err != nil {
			t.Fatalf("re-reading what Write wrote: %v\n%s", err, buf.Bytes())
		}
		if len(again) != len(evs) {
			t.Fatalf("%d events, then %d", len(evs), len(again))
		}
		for i := range evs {
			a, b := evs[i], again[i]
			av, bv := normal(a.Value), normal(b.Value)
			a.Value, b.Value = nil, nil
			if !reflect.DeepEqual(a, b) || !bytes.Equal(av, bv) {
				t.Fatalf("event %d changed: %+v %s → %+v %s", i, a, av, b, bv)
			}
		}
	})
}

// normal is a JSON value compacted and HTML-escaped, as Write emits it.
func normal(v json.RawMessage) []byte {
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		return v
	}
	var h bytes.Buffer
	json.HTMLEscape(&h, c.Bytes())
	return h.Bytes()
}
