//go:build linux

package capture

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// niceOf reads a process's (or thread's) niceness from its stat file.
func niceOf(t *testing.T, statPath string) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(statPath)
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid …: comm may hold spaces, so fields count from its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, err := strconv.Atoi(f[16]) // field 19 of stat, the 17th after comm
	return n, err == nil
}

// A browser with Config.Nice runs every one of its processes (the browser, its zygotes
// and the renderer that drew the page) at that niceness, and the worker's own threads
// stay at theirs.
func TestNiceChromium(t *testing.T) {
	self, _ := niceOf(t, "/proc/self/stat")
	b := newBrowser(t, Config{Tabs: 1, Nice: self + 7})
	mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "nice"})
	b.mu.Lock()
	pid := b.inst.proc.PID()
	b.mu.Unlock()
	procs := append([]int{pid}, descendants(pid)...)
	seen := 0
	for _, p := range procs {
		n, ok := niceOf(t, filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if !ok {
			continue // exited meanwhile
		}
		seen++
		if n != self+7 {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
			t.Errorf("pid %d (%s) runs at niceness %d, want %d", p, firstArg(cmdline), n, self+7)
		}
	}
	if seen < 3 {
		t.Errorf("only %d chromium processes read; want the browser, a zygote and a renderer", seen)
	}
	// The thread that started Chromium waits for it, niced; no other thread of ours is.
	tasks, _ := filepath.Glob("/proc/self/task/*/stat")
	niced := 0
	for _, st := range tasks {
		if n, ok := niceOf(t, st); ok && n != self {
			niced++
		}
	}
	if niced > 1 {
		t.Errorf("%d threads of the test process run niced; want only the one that started Chromium", niced)
	}
}

// Lanes sends interactive captures to the lane's browser and the others to the batch one.
func TestLanesRouteByContext(t *testing.T) {
	batch := newBrowser(t, Config{Tabs: 1})
	if err := batch.Close(); err != nil {
		t.Fatal(err)
	}
	l := Lanes{Batch: batch, Interactive: sharedBrowser(t)}
	req := Request{URL: fixtures.URL + "/page?h=100", Name: "lane"}
	res, err := l.Capture(WithInteractive(context.Background()), req)
	if err != nil || len(res.Images) != 1 {
		t.Fatalf("interactive capture: %v (%v); want one image from the lane's browser", err, res)
	}
	if _, err := l.Capture(context.Background(), req); err == nil {
		t.Fatal("a batch capture succeeded; want it on the closed batch browser, failing")
	}
}
