package pdftext

import (
	"fmt"
	"os"
	"syscall"
)

// sysProcAttr starts the child in its own process group, so killGroup reaches all of it,
// and has the kernel kill it when the thread that started it (and so the worker) dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the child's process group.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// limitSelf caps this process's CPU time at cpu seconds (the kernel kills it past them),
// its address space at mem bytes more than it maps now (when mem > 0), and its core dumps
// at none.
func limitSelf(cpu, mem int64) error {
	set := func(what int, n uint64) error {
		return syscall.Setrlimit(what, &syscall.Rlimit{Cur: n, Max: n})
	}
	if err := set(syscall.RLIMIT_CORE, 0); err != nil {
		return fmt.Errorf("core: %w", err)
	}
	if err := set(syscall.RLIMIT_CPU, uint64(cpu)); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	if mem <= 0 {
		return nil
	}
	// The Go runtime has already reserved address space it may never touch; the limit is on
	// top of it.
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return err
	}
	var pages uint64
	if _, err := fmt.Sscan(string(statm), &pages); err != nil {
		return fmt.Errorf("parse /proc/self/statm: %w", err)
	}
	if err := set(syscall.RLIMIT_AS, pages*uint64(os.Getpagesize())+uint64(mem)); err != nil {
		return fmt.Errorf("address space: %w", err)
	}
	return nil
}

// toolProcAttr has the kernel kill a poppler tool when the child that started it dies, so
// a killed child leaves nothing behind; the tool stays in the child's process group, which
// killGroup reaches.
func toolProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
