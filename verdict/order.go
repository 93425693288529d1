package verdict

import "fmt"

// Order is the grant order a lock strategy promises, which its fairness
// verdict is judged against: a strategy that promises FIFO fails on a
// later request granted before an earlier one that nothing explains, while
// every strategy, whatever it promises, fails on a wait that is long
// relative to the run.
type Order string

// Orders a strategy can promise.
const (
	// OrderUnknown: the strategy says nothing (a user's strategy that
	// predates the field); judged as NoOrder.
	OrderUnknown Order = ""
	// NoOrder: no order is promised, e.g. a try-lock with backoff, where
	// whoever retries first wins.
	NoOrder Order = "none"
	// FIFO: requests are granted in the order they joined the queue.
	FIFO Order = "fifo"
)

// ParseOrder reads an order as a flag or a file gives it.
func ParseOrder(s string) (Order, error) {
	switch o := Order(s); o {
	case NoOrder, FIFO:
		return o, nil
	}
	return "", fmt.Errorf("unknown order %q (valid: %s, %s)", s, FIFO, NoOrder)
}
