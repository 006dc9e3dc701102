package testenv

import "syscall"

// dieWithTest makes a process the tests start get SIGKILL when the test binary
// dies (a -timeout panic, a kill): an orphaned worker would otherwise keep
// polling its Redis database and take the tasks of whichever test leases that
// database next.
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
