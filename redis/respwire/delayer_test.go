package respwire

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/relay"
)

// TestDelayerHoldsOnlyAnArmedAcquiresReply: armed, the reply to a SET NX
// is held (here for an hour) until the fault ends, and counted, while
// the reply to a GET sent before it on another connection, and to a SET
// NX sent before the arming, pass at once; replies pair with requests in
// order on each connection.
func TestDelayerHoldsOnlyAnArmedAcquiresReply(t *testing.T) {
	d := NewAcquireReplyDelayer()
	early := d.Filter()
	early.Frame(relay.Tx, []byte(request("SET", "k", "v", "NX", "PX", "100")))
	d.Delay(time.Hour)
	get, acq := d.Filter(), d.Filter()
	get.Frame(relay.Tx, []byte(request("GET", "k")))
	acq.Frame(relay.Tx, []byte(request("SET", "k", "v", "NX", "PX", "100")))
	acq.Frame(relay.Tx, []byte(request("GET", "k")))
	// These return at once, or the test hangs for an hour.
	if early.Frame(relay.Rx, []byte("+OK\r\n")) != relay.Pass || get.Frame(relay.Rx, []byte("$1\r\nv\r\n")) != relay.Pass {
		t.Fatal("a reply was not passed")
	}
	if n := d.Delayed(); n != 0 {
		t.Fatalf("%d replies held before any armed acquire's reply came", n)
	}
	done := make(chan relay.Verdict)
	go func() { done <- acq.Frame(relay.Rx, []byte("+OK\r\n")) }()
	for d.Delayed() == 0 {
		select {
		case v := <-done:
			t.Fatalf("the armed acquire's reply passed at once (%v)", v)
		case <-time.After(time.Millisecond):
		}
	}
	d.Delay(0)
	if v := <-done; v != relay.Pass {
		t.Fatalf("the held reply: %v, want it passed", v)
	}
	if n := d.Delayed(); n != 1 {
		t.Errorf("Delayed() = %d, want 1", n)
	}
	// The GET behind it on that connection is no acquire: at once.
	if acq.Frame(relay.Rx, []byte("$1\r\nv\r\n")) != relay.Pass {
		t.Fatal("the GET's reply was not passed")
	}
}
