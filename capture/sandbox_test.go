package capture

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Pages are rendered in sandboxed renderers: each in Chromium's seccomp-bpf filter and in
// namespaces of its own, under a browser that is not root.
func TestChromiumRunsSandboxed(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "sandbox"})
	procs := chromiumProcs(t, b)

	wantUID := os.Geteuid()
	if wantUID == 0 {
		u, err := user.Lookup(DefaultChromeUser)
		if err != nil {
			t.Fatalf("look up %s: %v", DefaultChromeUser, err)
		}
		wantUID, _ = strconv.Atoi(u.Uid)
	}
	browser := procs[0]
	if got := browser.uids(t); got != [4]int{wantUID, wantUID, wantUID, wantUID} {
		t.Errorf("browser pid %d runs as uids (real, effective, saved, fs) %v, want %d", browser.pid, got, wantUID)
	}
	if browser.has("--no-sandbox") {
		t.Errorf("browser launched with --no-sandbox: %q", browser.cmdline)
	}

	selfUserNS, selfPidNS := nsLink(t, "self", "user"), nsLink(t, "self", "pid")
	renderers := 0
	for _, p := range procs {
		if !p.has("--type=renderer") {
			continue
		}
		renderers++
		if got := p.status(t, "Seccomp"); got != "2" {
			t.Errorf("renderer pid %d: Seccomp %q, want 2 (a seccomp-bpf filter)", p.pid, got)
		}
		userNS, pidNS := nsLink(t, strconv.Itoa(p.pid), "user"), nsLink(t, strconv.Itoa(p.pid), "pid")
		if userNS == selfUserNS && pidNS == selfPidNS {
			t.Errorf("renderer pid %d shares the worker's user (%s) and pid (%s) namespaces", p.pid, userNS, pidNS)
		}
		if uid := p.uids(t)[1]; uid == 0 {
			t.Errorf("renderer pid %d runs as root", p.pid)
		}
		t.Logf("renderer pid %d: seccomp %s, user ns %s, pid ns %s (worker: %s, %s)", p.pid, p.status(t, "Seccomp"), userNS, pidNS, selfUserNS, selfPidNS)
	}
	if renderers == 0 {
		t.Fatalf("no renderer among %d chromium processes", len(procs))
	}
}

// Chromium is driven over its DevTools pipe: none of its processes listens on a TCP port
// and it writes no DevToolsActivePort, so no other local process can drive it. The port
// mode (kept for measurements) is the control: there the check finds the listener.
func TestDevToolsIsAPipe(t *testing.T) {
	for _, tt := range []struct {
		name string
		port bool
	}{{"pipe", false}, {"port", true}} {
		t.Run(tt.name, func(t *testing.T) {
			start := newBrowser
			if tt.port {
				start = newPortBrowser
			}
			b := start(t, Config{Tabs: 1})
			mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "pipe"})
			procs := chromiumProcs(t, b)
			var listening []string
			for _, p := range procs {
				listening = append(listening, tcpListeners(t, p.pid)...)
			}
			b.mu.Lock()
			dir := b.inst.dir
			b.mu.Unlock()
			_, err := os.Stat(filepath.Join(dir, "DevToolsActivePort"))
			activePort := err == nil
			if tt.port {
				if len(listening) == 0 || !activePort {
					t.Fatalf("with a DevTools port: listening %v, DevToolsActivePort %v; the check sees nothing", listening, activePort)
				}
				return
			}
			if !procs[0].has("--remote-debugging-pipe") || slices.ContainsFunc(strings.Split(procs[0].cmdline, "\x00"),
				func(a string) bool { return strings.HasPrefix(a, "--remote-debugging-port") }) {
				t.Errorf("browser command line: %q", procs[0].cmdline)
			}
			if len(listening) > 0 {
				t.Errorf("chromium listens on TCP %v", listening)
			}
			if activePort {
				t.Errorf("chromium wrote %s/DevToolsActivePort", dir)
			}
		})
	}
}

// tcpListeners returns the local addresses of the TCP sockets pid holds that listen.
func tcpListeners(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.Fields(line) // sl local rem st ... uid timeout inode
			if len(fields) >= 10 && fields[3] == "0A" && inodes[fields[9]] {
				out = append(out, fields[1])
			}
		}
	}
	return out
}

// With SNAPQ_CHROME_NO_SANDBOX the renderers run unfiltered, and New says so: the checks
// above can fail.
func TestNoSandboxWarns(t *testing.T) {
	var logs syncBuffer
	b := newBrowser(t, Config{Tabs: 1, NoSandbox: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "nosandbox"})
	procs := chromiumProcs(t, b)
	if !procs[0].has("--no-sandbox") {
		t.Errorf("browser launched without --no-sandbox: %q", procs[0].cmdline)
	}
	for _, p := range procs {
		if p.has("--type=renderer") && p.status(t, "Seccomp") != "0" {
			t.Errorf("renderer pid %d: Seccomp %s without the sandbox, want 0", p.pid, p.status(t, "Seccomp"))
		}
	}
	if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "chromium runs without its sandbox") {
		t.Errorf("no sandbox warning in the logs:\n%s", got)
	}
}

// As root, a Chromium user that does not exist stops New with an error that says how to
// fix it; a worker that is not root needs no such user.
func TestMissingChromeUserRefused(t *testing.T) {
	needChromium(t)
	const name = "snapq-no-such-user"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, Config{Tabs: 1, ChromeUser: name, Logger: testLogger()})
	if os.Geteuid() != 0 {
		if err != nil {
			t.Fatalf("New as uid %d with a missing ChromeUser: %v (only root needs it)", os.Geteuid(), err)
		}
		_ = b.Close()
		return
	}
	if err == nil {
		_ = b.Close()
		t.Fatal("New started Chromium as root with a missing ChromeUser")
	}
	for _, want := range []string{
		`chromium user "snapq-no-such-user" does not exist`,
		"useradd --system --no-create-home --shell /usr/sbin/nologin snapq-no-such-user",
		"SNAPQ_CHROME_USER", "SNAPQ_CHROME_NO_SANDBOX=true",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New error %q lacks %q", err, want)
		}
	}
}

// chromiumProc is one process of a Browser's Chromium, from /proc.
type chromiumProc struct {
	pid     int
	cmdline string // NUL-separated
}

// chromiumProcs returns the Browser's browser process first, then its descendants.
func chromiumProcs(t *testing.T, b *Browser) []chromiumProc {
	t.Helper()
	b.mu.Lock()
	pid := b.inst.proc.PID()
	b.mu.Unlock()
	var out []chromiumProc
	for _, p := range append([]int{pid}, descendants(pid)...) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if err != nil {
			if p == pid {
				t.Fatalf("read the browser's command line: %v", err)
			}
			continue
		}
		out = append(out, chromiumProc{pid: p, cmdline: string(cmdline)})
	}
	return out
}

// has reports whether arg is one of the process's arguments. Chromium's children rewrite
// their command line as one space-separated string.
func (p chromiumProc) has(arg string) bool {
	return slices.Contains(strings.FieldsFunc(p.cmdline, func(r rune) bool { return r == 0 || r == ' ' }), arg)
}

// status returns a field of /proc/<pid>/status.
func (p chromiumProc) status(t *testing.T, field string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "status"))
	if err != nil {
		t.Fatalf("pid %d: %v", p.pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("pid %d: no %s in its status", p.pid, field)
	return ""
}

// uids returns the real, effective, saved and filesystem uids.
func (p chromiumProc) uids(t *testing.T) (u [4]int) {
	t.Helper()
	f := strings.Fields(p.status(t, "Uid"))
	for i := range min(len(f), 4) {
		u[i], _ = strconv.Atoi(f[i])
	}
	return u
}

func nsLink(t *testing.T, pid, ns string) string {
	t.Helper()
	l, err := os.Readlink(filepath.Join("/proc", pid, "ns", ns))
	if err != nil {
		t.Fatalf("read %s namespace of %s: %v", ns, pid, err)
	}
	return l
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
