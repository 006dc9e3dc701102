package capture

import "syscall"

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
