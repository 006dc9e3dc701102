//go:build unix

package capture

import (
	"errors"
	"syscall"
)

// killProcess kills Chromium and the process group it leads, as rod's launcher does, without
// the launcher's one-second grace sleep.
func killProcess(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// processAlive reports whether pid exists (conservatively: true when unsure).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}
