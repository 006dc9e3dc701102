package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// ProcessesWithArg lists the live processes (not zombies) whose command line
// contains substr, e.g. a test's own temporary directory that a worker's
// Chromium gets as its profile. Linux only (/proc); elsewhere it finds none.
func ProcessesWithArg(substr string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(substr)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(d, "stat")); err == nil {
			// The state follows the ")" that ends the command name: Z is a zombie.
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}
