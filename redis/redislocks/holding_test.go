package redislocks

import (
	"testing"
	"time"
)

// TestRenewWithinEndsAtTheValidity: a grant whose renewal's answer is
// still on its way when the validity of the last confirmed send runs out
// is lost then, not when the answer comes (a slow acquire leaves less
// validity than one renewal period); a renewal confirmed in time moves
// the end, and one confirmed too late does not bring the grant back.
func TestRenewWithinEndsAtTheValidity(t *testing.T) {
	const valid = 50 * time.Millisecond
	h := &holding{stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{})}
	answer := make(chan time.Time)
	renewed := make(chan struct{})
	go func() {
		defer close(h.done)
		// The first renewal is due after twenty validities: too late.
		h.renewWithin(20*valid, valid, time.Now(), func() (time.Time, bool) {
			renewed <- struct{}{}
			return <-answer, false
		})
	}()
	select {
	case <-h.lost:
	case <-renewed:
		t.Fatal("renewed before the grant's validity ran out; want the grant lost first")
	}
	<-renewed // the renewal is sent; its answer confirms a send made just now
	answer <- time.Now()
	<-h.done // and the extender stops: the grant stays lost
	select {
	case <-h.lost:
	default:
		t.Fatal("Lost reopened")
	}
}

// TestRenewWithinKeepsAConfirmedGrant: renewals confirmed within the
// validity keep the grant over many validities, until it is released.
func TestRenewWithinKeepsAConfirmedGrant(t *testing.T) {
	const valid = time.Second
	h := &holding{stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{})}
	renewals := 0
	go func() {
		defer close(h.done)
		h.renewWithin(valid/10, valid, time.Now(), func() (time.Time, bool) {
			renewals++
			return time.Now(), false
		})
	}()
	select {
	case <-h.lost:
		t.Fatal("a grant renewed every tenth of its validity was lost")
	case <-time.After(3 * valid):
	}
	close(h.stop)
	<-h.done
	if renewals == 0 {
		t.Fatal("never renewed")
	}
}
