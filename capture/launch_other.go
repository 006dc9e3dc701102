//go:build !linux

package capture

import (
	"errors"
	"syscall"
)

// sysProcAttr starts Chromium as this process: switching users is implemented for Linux
// only, and so is killing Chromium with the worker.
func sysProcAttr(cred *credential) (*syscall.SysProcAttr, error) {
	if cred != nil {
		return nil, errors.New("starting Chromium as another user is supported on Linux only: run the worker as an unprivileged user, or set SNAPQ_CHROME_NO_SANDBOX=true")
	}
	return &syscall.SysProcAttr{}, nil
}

// niceThread is Linux only: elsewhere Chromium runs at the worker's niceness.
func niceThread(int, bool) error { return nil }
