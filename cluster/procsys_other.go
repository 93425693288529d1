//go:build !unix

package cluster

import (
	"errors"
	"syscall"
)

func memberProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup is unsupported off Unix: member processes need signals.
func signalGroup(int, syscall.Signal) error {
	return errors.New("member processes need a Unix system (signals, process groups)")
}
