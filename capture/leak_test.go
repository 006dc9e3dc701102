package capture

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/egress"
)

// Recycling or restarting the browser must close every egress proxy it opened (the
// browser-wide one and each context's), with their goroutines.
func TestEgressProxiesClosedOnRecycle(t *testing.T) {
	needChromium(t)
	guard := egress.New(egress.Config{Policy: egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})})
	baseListeners, baseGoroutines := settled(t, -1, -1)

	const jobs = 4
	b := newBrowser(t, Config{Tabs: 1, BrowserRecycleAfter: 1,
		Egress: func() (EgressSession, error) { return guard.NewSession() }})
	for i := range jobs {
		// A job that succeeds leaves its tab (and the tab's proxy) idle in the slot.
		mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: fmt.Sprint(i)})
	}
	b.mu.Lock()
	inst := b.inst
	b.mu.Unlock()
	if inst != nil {
		t.Fatal("the last job did not retire its browser")
	}
	// Each job retired its browser; once the retirements are done nothing of theirs is left.
	listeners, goroutines := settled(t, baseListeners, baseGoroutines)
	t.Logf("before: %d listeners, %d goroutines; after %d recycles: %d, %d", baseListeners, baseGoroutines, jobs, listeners, goroutines)
	if listeners > baseListeners {
		t.Errorf("%d listening sockets after %d recycles, %d before", listeners, jobs, baseListeners)
	}
	if goroutines > baseGoroutines {
		t.Errorf("%d goroutines after %d recycles, %d before", goroutines, jobs, baseGoroutines)
	}

	// A restart after the browser died, and Close, must not leave any either.
	mustRunning := func() *instance {
		t.Helper()
		if err := b.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.inst
	}
	mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "x"}) // retires again
	old := mustRunning()
	killProcess(old.proc.PID())
	<-old.ctx.Done()
	mustRunning()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	listeners, goroutines = settled(t, baseListeners, baseGoroutines)
	if listeners > baseListeners || goroutines > baseGoroutines {
		t.Errorf("after a restart and Close: %d listening sockets (%d before), %d goroutines (%d before)",
			listeners, baseListeners, goroutines, baseGoroutines)
	}
}

// settled waits up to 10 s for this process's listening TCP sockets and goroutines to
// come down to at most the wanted counts (-1: just let them settle) and returns them.
func settled(t *testing.T, wantListeners, wantGoroutines int) (listeners, goroutines int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		time.Sleep(100 * time.Millisecond)
		listeners, goroutines = listeningSockets(t), runtime.NumGoroutine()
		done := wantListeners < 0 || (listeners <= wantListeners && goroutines <= wantGoroutines)
		if done || time.Now().After(deadline) {
			return listeners, goroutines
		}
	}
}

// listeningSockets counts the TCP sockets in LISTEN state that this process holds open.
func listeningSockets(t *testing.T) int {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("list fds: %v", err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" && mine[fields[9]] {
				n++
			}
		}
		_ = f.Close()
	}
	return n
}
