package capture

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Chromium runs untrusted pages: none of the worker's environment (database and S3
// credentials, SNAPQ_* settings) may reach its browser or renderer processes.
func TestChromiumEnvironmentIsMinimal(t *testing.T) {
	const canary = "SNAPQ_TEST_SECRET"
	t.Setenv(canary, "canary-3f9a")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "canary-aws")
	t.Setenv("PGPASSWORD", "canary-pg")
	b := newBrowser(t, Config{Tabs: 1})
	mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "env"})

	b.mu.Lock()
	pid := b.inst.proc.PID()
	b.mu.Unlock()
	procs := append([]int{pid}, descendants(pid)...)
	renderers := 0
	for _, p := range procs {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "environ"))
		if err != nil {
			if p == pid {
				t.Fatalf("read the browser's environment: %v", err)
			}
			t.Logf("pid %d: %v", p, err)
			continue
		}
		if bytes.Contains(cmdline, []byte("--type=renderer")) {
			renderers++
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			name, _, _ := strings.Cut(kv, "=")
			// Chromium's children rewrite their argv, which spills over the environment
			// block, so only the browser's is read as names; every process is searched for
			// the secrets.
			if p == pid && !allowedChromiumEnv[name] && name != "" {
				t.Errorf("pid %d (%s) has %s in its environment", p, firstArg(cmdline), name)
			}
			if strings.Contains(kv, "canary-") || strings.HasPrefix(kv, "SNAPQ_") {
				t.Errorf("pid %d (%s) inherited the secret: %s", p, firstArg(cmdline), kv)
			}
		}
	}
	if renderers == 0 {
		t.Errorf("no renderer among %d chromium processes; the test proves less than it should", len(procs))
	}
}

// allowedChromiumEnv is what the test accepts in Chromium's environment.
var allowedChromiumEnv = map[string]bool{
	"PATH": true, "HOME": true, "TMPDIR": true, "TZ": true, "LANG": true,
	"XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true, "XDG_DATA_HOME": true, "XDG_RUNTIME_DIR": true,
	// Set by Debian's /usr/bin/chromium wrapper or by Chromium itself for its children.
	"CHROME_WRAPPER": true, "CHROME_DESKTOP": true, "CHROME_VERSION_EXTRA": true, "GOOGLE_API_KEY": true, "CHROMIUM_FLAGS": true, "PWD": true,
	"GOOGLE_DEFAULT_CLIENT_ID": true, "GOOGLE_DEFAULT_CLIENT_SECRET": true,
}

func firstArg(cmdline []byte) string {
	s, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(s))
}

// descendants lists the live descendants of pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may contain spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, children[p]...)
		queue = append(queue, children[p]...)
	}
	return out
}
