//go:build !linux

package testenv

import "syscall"

// dieWithTest: only Linux has a parent-death signal.
func dieWithTest() *syscall.SysProcAttr { return nil }
