package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decodeEventLegacy is the reference decoder that decodeEvent and
// decodeEventSlow must both agree with: encoding/json alone, with the
// contract's validation written out plainly (as decodeEvent was before
// fastDecode, plus the check of `f` and the field messages of jsonError).
func decodeEventLegacy(b []byte, e *Event) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return jsonError(err)
	}
	switch {
	case w.Time == nil:
		return errors.New(`missing "time"`)
	case w.Process == nil:
		return errors.New(`missing "process"`)
	case w.Type == nil:
		return errors.New(`missing "type"`)
	case w.F == nil || *w.F == "":
		return errors.New(`missing "f"`)
	}
	ty, ok := legacyTypes[*w.Type]
	if !ok {
		return fmt.Errorf("type %q is not one of invoke, ok, fail, info", *w.Type)
	}
	f, ok := legacyFs[*w.F]
	if !ok {
		return fmt.Errorf("f %q is not one of acquire, release, read, write, crash, pause, resume, lease-lost, wakeup, fault, rpcs, key-deleted, clock, lease-op, key-op", *w.F)
	}
	if *w.Time < 0 {
		return fmt.Errorf("negative time %d", *w.Time)
	}
	if *w.Process < NemesisProcess {
		return fmt.Errorf("process %d: must be ≥0, or -1 for the nemesis", *w.Process)
	}
	if bytes.Equal(w.Value, []byte("null")) {
		w.Value = nil
	}
	*e = Event{Time: *w.Time, Process: *w.Process, Type: ty, F: f, Lock: w.Lock,
		Token: w.Token, Revision: w.Revision, Value: w.Value, Error: w.Error, Key: w.Key, Lease: w.Lease}
	return nil
}

// legacyTypes and legacyFs are the contract's names written out, apart
// from the tables the decoder uses.
var (
	legacyTypes = map[string]Type{"invoke": Invoke, "ok": OK, "fail": Fail, "info": Info}
	legacyFs    = map[string]Function{"acquire": FAcquire, "release": FRelease,
		"read": FRead, "write": FWrite, "crash": FCrash, "pause": FPause,
		"resume": FResume, "lease-lost": FLeaseLost, "wakeup": FWakeup,
		"fault": FFault, "rpcs": FRPCs, "key-deleted": FKeyDeleted, "clock": FClock,
		"lease-op": FLeaseOp, "key-op": FKeyOp}
)

// fastCases are lines for the equivalence tests and fuzz seeds; fast says
// whether fastDecode must take the line itself (true) or leave it to
// encoding/json (false).
var fastCases = []struct {
	name string
	line string
	fast bool
}{
	// Typical lines, every kind of event.
	{"invoke acquire", `{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"lock"}`, true},
	{"ok acquire", `{"time":45023794,"process":2,"type":"ok","f":"acquire","lock":"lock","token":2087,"key":"/lockbench/x/lock/24dca226f03c4b4c","lease":"24dca226f03c4b4c"}`, true},
	{"fail acquire", `{"time":7,"process":1,"type":"fail","f":"acquire","lock":"lock","error":"context deadline exceeded"}`, true},
	{"info release", `{"time":8,"process":1,"type":"info","f":"release","lock":"lock","error":"timeout"}`, true},
	{"ok acquire with revision", `{"time":45023794,"process":2,"type":"ok","f":"acquire","lock":"lock","token":2087,"revision":2090,"key":"/k","lease":"24"}`, true},
	{"ok release with revision", `{"time":9,"process":1,"type":"ok","f":"release","lock":"lock","token":2087,"revision":2091}`, true},
	{"duplicate revision", `{"time":9,"process":1,"type":"ok","f":"release","revision":1,"revision":2}`, false},
	{"write", `{"time":9,"process":3,"type":"invoke","f":"write","lock":"lock","token":12,"value":21}`, true},
	{"read", `{"time":10,"process":3,"type":"ok","f":"read","lock":"lock","value":21}`, true},
	{"fault invoke", `{"time":1,"process":-1,"type":"invoke","f":"fault","value":{"fault":"crash-member","target":"leader","resolved":"member:0","for_ns":3000000000}}`, true},
	{"fault ok", `{"time":2,"process":-1,"type":"ok","f":"fault","value":{"fault":"crash-member"}}`, true},
	{"crash", `{"time":3,"process":4,"type":"info","f":"crash"}`, true},
	{"pause resume", `{"time":4,"process":4,"type":"invoke","f":"pause"}`, true},
	{"resume", `{"time":5,"process":4,"type":"ok","f":"resume"}`, true},
	{"lease lost", `{"time":6,"process":4,"type":"info","f":"lease-lost","lock":"lock","lease":"694d"}`, true},
	{"wakeup", `{"time":6,"process":4,"type":"ok","f":"wakeup","lock":"lock"}`, true},
	{"rpcs", `{"time":11,"process":5,"type":"ok","f":"rpcs","value":{"range":3,"txn":4,"watch":1}}`, true},
	{"unknown f", `{"time":11,"process":5,"type":"ok","f":"frobnicate"}`, false},
	{"field order", `{"lease":"7f","key":"k","value":1,"token":3,"lock":"l","f":"acquire","type":"ok","process":0,"time":1}`, true},

	// Values of every kind.
	{"value null", `{"time":1,"process":0,"type":"ok","f":"read","value":null}`, true},
	{"value true", `{"time":1,"process":0,"type":"ok","f":"read","value":true}`, true},
	{"value false", `{"time":1,"process":0,"type":"ok","f":"read","value":false}`, true},
	{"value string", `{"time":1,"process":0,"type":"ok","f":"read","value":"x"}`, true},
	{"value string escaped", `{"time":1,"process":0,"type":"ok","f":"read","value":"a\"b\\c\u00e9"}`, true},
	{"value string bad escape", `{"time":1,"process":0,"type":"ok","f":"read","value":"a\qb"}`, false},
	{"value float", `{"time":1,"process":0,"type":"ok","f":"read","value":-1.5e+10}`, true},
	{"value huge", `{"time":1,"process":0,"type":"ok","f":"read","value":123456789012345678901234567890}`, true},
	{"value bad number", `{"time":1,"process":0,"type":"ok","f":"read","value":01}`, false},
	{"value dot", `{"time":1,"process":0,"type":"ok","f":"read","value":1.}`, false},
	{"value array", `{"time":1,"process":0,"type":"ok","f":"read","value":[1, 2 ,{"a" : "b]}"}]}`, true},
	{"value empty object", `{"time":1,"process":0,"type":"ok","f":"read","value":{}}`, true},
	{"value nested deep", `{"time":1,"process":0,"type":"ok","f":"read","value":[[[[{"a":[{}]}]]]]}`, true},
	{"value mismatched", `{"time":1,"process":0,"type":"ok","f":"read","value":[1}}`, false},
	{"value unterminated", `{"time":1,"process":0,"type":"ok","f":"read","value":[1,2`, false},
	{"value trailing comma", `{"time":1,"process":0,"type":"ok","f":"read","value":[1,]}`, false},
	{"value literal typo", `{"time":1,"process":0,"type":"ok","f":"read","value":nul}`, false},
	{"value literal glued", `{"time":1,"process":0,"type":"ok","f":"read","value":nullx}`, false},
	{"value missing", `{"time":1,"process":0,"type":"ok","f":"read","value":}`, false},

	// Strings encoding/json must unquote.
	{"escape in lock", `{"time":1,"process":0,"type":"ok","f":"acquire","lock":"a\/b"}`, false},
	{"unicode escape", `{"time":1,"process":3,"type":"ok","f":"rpcs","error":"\u2028&"}`, false},
	{"raw unicode", `{"time":1,"process":0,"type":"ok","f":"acquire","lock":"verrou-é-锁-🔒"}`, true},
	{"invalid utf8", "{\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\",\"lock\":\"a\xffb\"}", false},
	{"surrogate utf8", "{\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\",\"lock\":\"\xed\xa0\x80\"}", false},
	{"control char", "{\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\",\"lock\":\"a\tb\"}", false},
	{"del char", "{\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\",\"lock\":\"a\x7fb\"}", true},
	{"escaped key", `{"\u0074ime":1,"process":0,"type":"ok","f":"acquire"}`, false},

	// Keys.
	{"unknown key", `{"time":7,"process":2,"type":"ok","f":"rpcs","value":31,"extra":"ignored"}`, false},
	{"upper-case key", `{"Time":1,"process":0,"type":"ok","f":"acquire"}`, false},
	{"kelvin key", `{"time":1,"process":0,"type":"ok","f":"acquire","\u212aey":"k"}`, false},
	{"duplicate key", `{"time":1,"time":2,"process":0,"type":"ok","f":"acquire"}`, false},
	{"duplicate null", `{"time":1,"time":null,"process":0,"type":"ok","f":"acquire"}`, false},
	{"duplicate value", `{"time":1,"process":0,"type":"ok","f":"read","value":1,"value":null}`, false},
	{"empty key", `{"":1,"time":1,"process":0,"type":"ok","f":"acquire"}`, false},

	// Missing and empty fields (errors from the shared validation).
	{"empty object", `{}`, true},
	{"empty object spaced", " { } ", true},
	{"missing time", `{"process":0,"type":"ok","f":"acquire"}`, true},
	{"missing process", `{"time":0,"type":"ok","f":"acquire"}`, true},
	{"missing type", `{"time":0,"process":0,"f":"acquire"}`, true},
	{"missing f", `{"time":0,"process":0,"type":"ok"}`, true},
	{"empty f", `{"time":0,"process":0,"type":"ok","f":""}`, false},
	{"bad type", `{"time":0,"process":0,"type":"done","f":"acquire"}`, false},
	{"empty type", `{"time":0,"process":0,"type":"","f":"acquire"}`, false},
	{"null time", `{"time":null,"process":0,"type":"ok","f":"acquire"}`, false},
	{"null lock", `{"time":0,"process":0,"type":"ok","f":"acquire","lock":null}`, false},

	// Numbers.
	{"negative time", `{"time":-1,"process":0,"type":"ok","f":"acquire"}`, true},
	{"negative zero", `{"time":-0,"process":-0,"type":"ok","f":"acquire","token":-0}`, true},
	{"nemesis", `{"time":0,"process":-1,"type":"ok","f":"fault"}`, true},
	{"process below -1", `{"time":0,"process":-2,"type":"ok","f":"acquire"}`, true},
	{"negative token", `{"time":0,"process":0,"type":"ok","f":"acquire","token":-5}`, true},
	{"max int64", `{"time":9223372036854775807,"process":2147483647,"type":"info","f":"fault","token":-9223372036854775808}`, true},
	{"process past int32", `{"time":1,"process":2147483648,"type":"info","f":"fault"}`, false},
	{"time overflow", `{"time":9223372036854775808,"process":0,"type":"ok","f":"acquire"}`, false},
	{"token underflow", `{"time":0,"process":0,"type":"ok","f":"acquire","token":-9223372036854775809}`, false},
	{"twenty digits", `{"time":10000000000000000000,"process":0,"type":"ok","f":"acquire"}`, false},
	{"huge", `{"time":99999999999999999999999999,"process":0,"type":"ok","f":"acquire"}`, false},
	{"float time", `{"time":1.5,"process":0,"type":"ok","f":"acquire"}`, false},
	{"integral float", `{"time":1.0,"process":0,"type":"ok","f":"acquire"}`, false},
	{"exponent", `{"time":1e3,"process":0,"type":"ok","f":"acquire"}`, false},
	{"leading zero", `{"time":01,"process":0,"type":"ok","f":"acquire"}`, false},
	{"plus sign", `{"time":+1,"process":0,"type":"ok","f":"acquire"}`, false},
	{"lone minus", `{"time":-,"process":0,"type":"ok","f":"acquire"}`, false},
	{"string time", `{"time":"1","process":0,"type":"ok","f":"acquire"}`, false},
	{"number type", `{"time":1,"process":0,"type":1,"f":"acquire"}`, false},
	{"bool token", `{"time":1,"process":0,"type":"ok","f":"acquire","token":true}`, false},
	{"object lock", `{"time":1,"process":0,"type":"ok","f":"acquire","lock":{}}`, false},

	// Whitespace and framing.
	{"spaces", " {\t\"time\" :\r\n1 , \"process\": 0,\"type\" : \"ok\" ,\"f\":\"acquire\" }\n", true},
	{"no object", `nope`, false},
	{"null line", `null`, false},
	{"array line", `[1]`, false},
	{"empty", ``, false},
	{"trailing garbage", `{"time":1,"process":0,"type":"ok","f":"acquire"}x`, false},
	{"two objects", `{"time":1,"process":0,"type":"ok","f":"acquire"}{}`, false},
	{"trailing comma", `{"time":1,"process":0,"type":"ok","f":"acquire",}`, false},
	{"missing comma", `{"time":1 "process":0,"type":"ok","f":"acquire"}`, false},
	{"missing colon", `{"time" 1,"process":0,"type":"ok","f":"acquire"}`, false},
	{"unterminated", `{"time":1,"process":0,"type":"ok","f":"acquire"`, false},
	{"unterminated string", `{"time":1,"process":0,"type":"ok","f":"acq`, false},
	{"nbsp", "\u00a0{\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\"}", false},
	{"bom", "\ufeff{\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"acquire\"}", false},
}

// checkSame fails t unless decodeEvent, decodeEventSlow and the pre-change
// decoder agree on line: the same Event, or errors with the same text.
func checkSame(t *testing.T, line []byte) {
	t.Helper()
	in := bytes.Clone(line)
	var got, slow, want Event
	gotErr := decodeEvent(line, &got)
	if !bytes.Equal(in, line) {
		t.Fatalf("decodeEvent modified its input %q", in)
	}
	slowErr := decodeEventSlow(line, &slow)
	wantErr := decodeEventLegacy(line, &want)
	// A reader's decoder, as readAt and Read keep one from line to line:
	// the second decode finds the line's lock name in its cache.
	var d decoder
	var first, again Event
	firstErr := d.decode(line, &first)
	againErr := d.decode(line, &again)
	for _, c := range []struct {
		name string
		ev   Event
		err  error
	}{{"decodeEvent", got, gotErr}, {"decodeEventSlow", slow, slowErr},
		{"decoder.decode", first, firstErr}, {"decoder.decode again", again, againErr}} {
		if (c.err == nil) != (wantErr == nil) || c.err != nil && c.err.Error() != wantErr.Error() {
			t.Fatalf("%s(%q): err = %v, want %v", c.name, line, c.err, wantErr)
		}
		if !reflect.DeepEqual(c.ev, want) {
			t.Fatalf("%s(%q) = %#v\nwant %#v", c.name, line, c.ev, want)
		}
	}
}

func TestFastDecodeEquivalence(t *testing.T) {
	for _, tc := range fastCases {
		t.Run(tc.name, func(t *testing.T) {
			checkSame(t, []byte(tc.line))
			var p parsedEvent
			if fast := fastDecode([]byte(tc.line), &p); fast != tc.fast {
				t.Errorf("fastDecode took the line: %v, want %v", fast, tc.fast)
			}
		})
	}
}

// TestFastDecodeTakesBench: every line of the benchmark history, as the
// recorder writes it, takes the fast path.
func TestFastDecodeTakesBench(t *testing.T) {
	for i, line := range bytes.Split(bytes.TrimSpace(readBench(60)), []byte("\n")) {
		var p parsedEvent
		if !fastDecode(line, &p) {
			t.Errorf("line %d falls back: %s", i+1, line)
		}
		checkSame(t, line)
	}
}

// TestFastDecodeDoesNotAlias: decoded events keep nothing of the line,
// which Read's scanner reuses.
func TestFastDecodeDoesNotAlias(t *testing.T) {
	line := []byte(`{"time":1,"process":0,"type":"info","f":"write","lock":"l","error":"e","key":"k","lease":"7f","value":[1]}`)
	var p parsedEvent
	if !fastDecode(line, &p) {
		t.Fatal("fastDecode refused the line")
	}
	want := p.ev
	want.Value = bytes.Clone(want.Value)
	for i := range line {
		line[i] = 'X'
	}
	if !reflect.DeepEqual(p.ev, want) || p.ev.Lock != "l" || p.ev.Lease != "7f" {
		t.Errorf("event changed with its line: %+v", p.ev)
	}
}

func TestReadFastMatchesSlow(t *testing.T) {
	var in strings.Builder
	for _, tc := range fastCases {
		var e Event
		if !strings.Contains(tc.line, "\n") && decodeEventLegacy([]byte(tc.line), &e) == nil {
			in.WriteString(tc.line + "\n")
		}
	}
	got, err := Read(strings.NewReader(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	var want []Event
	for _, line := range strings.Split(strings.TrimSpace(in.String()), "\n") {
		var e Event
		if err := decodeEventLegacy(bytes.TrimSpace([]byte(line)), &e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read = %+v\nwant %+v", got, want)
	}
}

// FuzzDecodeEquivalence: for any line, decodeEvent (fast path first) gives
// exactly what encoding/json alone gives.
//
//	go test -run '^$' -fuzz FuzzDecodeEquivalence -fuzztime 60s ./history
func FuzzDecodeEquivalence(f *testing.F) {
	for _, tc := range fastCases {
		f.Add([]byte(tc.line))
	}
	for _, line := range bytes.Split(readBench(6), []byte("\n")) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkSame(t, line)
	})
}

// BenchmarkDecodeEvent is the cost of decoding one typical line, without
// Read's scanning and slice growth: decodeEvent as Read calls it, against
// encoding/json alone.
//
//	go test -run '^$' -bench BenchmarkDecodeEvent -benchmem ./history
func BenchmarkDecodeEvent(b *testing.B) {
	lines := bytes.Split(bytes.TrimSpace(readBench(6000)), []byte("\n"))
	for _, bc := range []struct {
		name   string
		decode func([]byte, *Event) error
	}{{"fast", decodeEvent}, {"slow", decodeEventSlow}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var e Event
			for i := 0; b.Loop(); i++ {
				if err := bc.decode(lines[i%len(lines)], &e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
