//go:build !unix

package capture

import "os"

// killProcess kills Chromium.
func killProcess(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
