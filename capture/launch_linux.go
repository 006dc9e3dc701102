package capture

import (
	"fmt"
	"syscall"
)

// sysProcAttr starts Chromium in its own process group (killProcess kills the group), as
// cred when not nil — with no supplementary groups, so none of root's carry over — and
// killed with SIGKILL if the worker dies first (Go sets the parent-death signal after the
// user change, which would otherwise clear it).
func sysProcAttr(cred *credential) (*syscall.SysProcAttr, error) {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if cred != nil {
		a.Credential = &syscall.Credential{Uid: cred.uid, Gid: cred.gid, Groups: []uint32{}}
	}
	return a, nil
}

// niceThread sets the calling thread's niceness to n when on (the caller holds the thread
// locked; Linux keeps a niceness per thread, and a process started from the thread
// inherits it).
func niceThread(n int, on bool) error {
	if !on {
		return nil
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), n); err != nil {
		return fmt.Errorf("set chromium's niceness to %d: %w", n, err)
	}
	return nil
}
