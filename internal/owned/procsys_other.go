//go:build !unix

package owned

import (
	"errors"
	"syscall"
)

// ProcAttr is nothing off Unix: no process groups.
func ProcAttr() *syscall.SysProcAttr { return nil }

// SignalGroup is unsupported off Unix: child processes need signals.
func SignalGroup(int, syscall.Signal) error {
	return errors.New("child processes need a Unix system (signals, process groups)")
}
