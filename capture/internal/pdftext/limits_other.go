//go:build !linux

package pdftext

import (
	"os"
	"syscall"
)

// sysProcAttr: outside Linux the child gets no process group of its own nor a parent-death
// signal; the wall clock still kills it.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the child.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// limitSelf sets no limits outside Linux: only ReadInChild's wall clock bounds the child.
func limitSelf(cpu, mem int64) error { return nil }

// toolProcAttr: outside Linux a poppler tool gets no parent-death signal.
func toolProcAttr() *syscall.SysProcAttr { return nil }
