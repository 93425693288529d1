package cli

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/lockbench/lockbench/verdict"
)

// Exit statuses, the same for every command (docs/design.md §9). Scripts
// and CI tell the outcomes apart by them, so they never change.
const (
	// ExitPass: every check passed (suite: every cell as expected).
	ExitPass = 0
	// ExitViolation: a check failed, a verdict differs from its
	// expectation, or compare found a regression.
	ExitViolation = 1
	// ExitUsage: bad input or usage; one message says what and what is
	// valid, and nothing was written.
	ExitUsage = 2
	// ExitHarness: the harness could not do its job (e.g. etcd did not
	// start, or its members did not stop).
	ExitHarness = 3
	// ExitPanic: lockbench panicked, a bug. Its own status because Go's
	// default for a panic (2) would read as "bad input".
	ExitPanic = 4
	// ExitUnknown: no check failed, but one could not decide (verdict
	// unknown, e.g. fencing of writes that carry no token). Its own status
	// because 0 promises every check passed, and 1 would call a history
	// wrong that no check found wrong. suite judges cells against their
	// expectations instead, so it never exits with it.
	ExitUnknown = 5
	// ExitInterrupted: stopped by SIGINT or SIGTERM; what ran was written.
	ExitInterrupted = 130
)

// Outcomes that are not failures of lockbench. Returned bare, they print
// nothing: the tables on stdout already said it.
var (
	// errViolation: a check failed (or an expectation, or a regression).
	errViolation = errors.New("a check failed")
	// errUnknown: no check failed, but one could not decide.
	errUnknown = errors.New("a check could not decide")
	// errInterrupted: a signal stopped the work.
	errInterrupted = errors.New("interrupted")
	// errHelpShown: --help was asked for and printed.
	errHelpShown = errors.New("help shown")
	// errUsageShown: the usage text was printed for a bare "lockbench".
	errUsageShown = badInput(errors.New("no command given"))
)

// saturatedAdvice is what every saturated outcome tells the user to do.
const saturatedAdvice = "not evidence about the lock: run fewer clients (or --shared-conns), or on a less loaded machine"

// saturated is the outcome of work whose verdicts failed on a saturated
// harness (report.Saturation): the harness could not do its job, exit 3,
// and never a violation. what says which work, and why it was saturated.
func saturated(what string) error {
	return fmt.Errorf("the harness was saturated: %s; its verdicts are %s", what, saturatedAdvice)
}

// usageError marks an error of the user's input, not of the run.
type usageError struct{ error }

// Unwrap returns the input error.
func (u usageError) Unwrap() error { return u.error }

// badInput marks err as the user's input (exit 2).
func badInput(err error) error { return usageError{err} }

// badInputf is badInput(fmt.Errorf(format, args...)).
func badInputf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// interrupted marks err as what a signal left (exit 130); nil stays a
// bare errInterrupted.
func interrupted(err error) error {
	if err == nil {
		return errInterrupted
	}
	return fmt.Errorf("%w: %w", errInterrupted, err)
}

// panicError is a recovered panic with the stack where it happened.
type panicError struct {
	value any
	stack []byte
}

// Error is the panic, what to do about it, and the stack.
func (p *panicError) Error() string {
	return fmt.Sprintf("panic: %v (a bug in lockbench or in a lock strategy; please report it with this stack)\n%s", p.value, p.stack)
}

// recovered wraps a recovered panic value with the current stack.
func recovered(r any) error { return &panicError{value: r, stack: debug.Stack()} }

// exitCode is the one place that maps an outcome to an exit status.
func exitCode(err error) int {
	var pe *panicError
	var ue usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return ExitPass
	case errors.As(err, &pe):
		return ExitPanic
	case errors.Is(err, errInterrupted):
		return ExitInterrupted
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, errViolation):
		return ExitViolation
	case errors.Is(err, errUnknown):
		return ExitUnknown
	}
	return ExitHarness
}

// verdictOutcome is the outcome of a checked history's verdict, for the
// commands that report one (check, run, report): fail is a violation,
// unknown its own outcome, pass none.
func verdictOutcome(v verdict.Verdict) error {
	switch v {
	case verdict.Fail:
		return errViolation
	case verdict.Unknown:
		return errUnknown
	}
	return nil
}

// message is what to print for err: nothing for the outcomes that speak
// through stdout.
func message(err error) string {
	switch err {
	case nil, errViolation, errUnknown, errInterrupted, errHelpShown, errUsageShown:
		return ""
	}
	return err.Error()
}
