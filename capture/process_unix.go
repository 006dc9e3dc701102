//go:build unix

package capture

import "syscall"

// killProcess kills Chromium and the process group it leads, as rod's launcher does, without
// the launcher's one-second grace sleep.
func killProcess(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
