package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/internal/testenv"
)

// probeEnv makes the test binary run probeMain instead of the tests (TestMain):
// the process a test starts as Chromium's user to attack the worker.
const probeEnv = "SNAPQ_E2E_PROBE"

// A process running as Chromium's user — a Chromium browser process taken over
// by a page — reaches neither the worker's credentials nor a DevTools endpoint
// of the worker's Chromium. The worker runs as that same user here, as it does
// in the container images (a worker that is not root starts Chromium as itself).
func TestChromiumUserCannotReachWorker(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "root (to run the worker and the probe as "+capture.DefaultChromeUser+")", errors.New("not root"))
	}
	u, err := user.Lookup(capture.DefaultChromeUser)
	if err != nil {
		testenv.Unavailable(t, "user "+capture.DefaultChromeUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secretKey := base64.StdEncoding.EncodeToString(key)
	// The worker's own TMPDIR (so its Chromium profiles are told apart from
	// other tests'), reachable by that user; the binaries too.
	tmp := sharedDir(t, "snapq-e2e-sandbox-tmp")
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startStack(t, "SNAPQ_SECRET_KEY="+secretKey)
	s.stop("worker", syscall.SIGTERM)
	s.procs.Env = append(s.procs.Env, "TMPDIR="+tmp)
	s.procs.Credential = map[string]*syscall.Credential{"worker": cred}
	s.start("worker")

	// A capture, so the worker's Chromium is up (it stays up between jobs).
	site := fixtureSite(t)
	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{{"url": site + "/short"}}}, &b); code != http.StatusAccepted {
		t.Fatalf("POST batch: status %d", code)
	}
	if done := s.waitBatch(b.ID, 90*time.Second); done.Counts["succeeded"] != 1 {
		t.Fatalf("capture as %s: %+v", u.Username, done.Counts)
	}
	worker := s.procs.Pid("worker")
	chrome := testenv.ProcessesWithArg(tmp)
	if len(chrome) == 0 {
		t.Fatalf("no Chromium process with a profile under %s", tmp)
	}
	var profiles []string
	for _, pid := range chrome {
		if d := argValue(pid, "--user-data-dir="); d != "" && !slices.Contains(profiles, d) {
			profiles = append(profiles, d)
		}
	}
	rep := runProbe(t, cred, worker, profiles)

	if rep.EnvironErr == "" {
		t.Errorf("%s read /proc/%d/environ of the worker (%d variables, SNAPQ_SECRET_KEY among them: %v)",
			u.Username, worker, len(rep.EnvironNames), slices.Contains(rep.EnvironNames, "SNAPQ_SECRET_KEY"))
	}
	if rep.MemErr == "" {
		t.Errorf("%s opened /proc/%d/mem of the worker", u.Username, worker)
	}
	ours := socketInodes(append([]int{worker}, chrome...))
	for _, l := range rep.Listeners {
		if !ours[l.Inode] {
			continue // another test's process of the same user
		}
		t.Logf("listening socket of the worker or its Chromium: %s (answer %q)", l.Addr, l.Answer)
		if l.DevTools {
			t.Errorf("%s reached a DevTools endpoint of the worker's Chromium at %s: %q", u.Username, l.Addr, l.Answer)
		}
	}
	for _, f := range rep.ActivePort {
		t.Errorf("%s read %s: the DevTools port of the worker's Chromium", u.Username, f)
	}
	t.Logf("probe as %s: environ: %s; mem: %s; %d listening sockets of the user, %d of the worker and its Chromium (%d processes)",
		u.Username, rep.EnvironErr, rep.MemErr, len(rep.Listeners), countOurs(rep.Listeners, ours), len(chrome))
}

// sharedDir makes a directory every user can enter and write (like /tmp),
// removed when the test ends.
func sharedDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// probeReport is what the probe found.
type probeReport struct {
	EnvironErr   string     `json:"environ_err"`   // "" when /proc/<worker>/environ was read
	EnvironNames []string   `json:"environ_names"` // the variable names read, never values
	MemErr       string     `json:"mem_err"`       // "" when /proc/<worker>/mem opened
	Listeners    []listener `json:"listeners"`     // TCP listening sockets of the probe's uid
	ActivePort   []string   `json:"active_port"`   // DevToolsActivePort files read
}

type listener struct {
	Addr     string `json:"addr"`
	Inode    string `json:"inode"`
	DevTools bool   `json:"devtools"` // answered GET /json/version as a browser
	Answer   string `json:"answer"`   // the start of its answer
}

// runProbe runs probeMain as cred against the worker's pid and Chromium's
// profile dirs, from a copy of the test binary the user can execute.
func runProbe(t *testing.T, cred *syscall.Credential, worker int, profiles []string) probeReport {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := sharedDir(t, "snapq-e2e-probe")
	bin := filepath.Join(dir, "probe")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{probeEnv + "=1", "PROBE_PID=" + strconv.Itoa(worker), "PROBE_PROFILES=" + strings.Join(profiles, "\n")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	var rep probeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("probe answer %q: %v", out, err)
	}
	return rep
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// probeMain is the probe: it tries what a process of Chromium's user would,
// and prints a probeReport.
func probeMain() int {
	pid := os.Getenv("PROBE_PID")
	var rep probeReport
	if b, err := os.ReadFile("/proc/" + pid + "/environ"); err != nil {
		rep.EnvironErr = err.Error()
	} else {
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, _, ok := strings.Cut(kv, "="); ok {
				rep.EnvironNames = append(rep.EnvironNames, k)
			}
		}
	}
	if f, err := os.Open("/proc/" + pid + "/mem"); err != nil {
		rep.MemErr = err.Error()
	} else {
		f.Close()
	}
	rep.Listeners = probeListeners(os.Getuid())
	for _, d := range strings.Split(os.Getenv("PROBE_PROFILES"), "\n") {
		if d == "" {
			continue
		}
		f := filepath.Join(d, "DevToolsActivePort")
		if _, err := os.ReadFile(f); err == nil {
			rep.ActivePort = append(rep.ActivePort, f)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 1
	}
	return 0
}

// probeListeners lists the TCP sockets uid listens on (/proc/net/tcp and
// tcp6) and asks each for /json/version, as a DevTools client would.
func probeListeners(uid int) []listener {
	var ls []listener
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || fields[3] != "0A" || fields[7] != strconv.Itoa(uid) {
				continue
			}
			addr := procNetAddr(fields[1])
			if addr == "" {
				continue
			}
			l := listener{Addr: addr, Inode: fields[9]}
			l.Answer = askDevTools(addr)
			l.DevTools = strings.Contains(l.Answer, "webSocketDebuggerUrl")
			ls = append(ls, l)
		}
		file.Close()
	}
	return ls
}

// procNetAddr turns /proc/net/tcp's "0100007F:1F90" (or its 32-hex-digit
// IPv6 form) into a dialable address; an unspecified address becomes loopback.
func procNetAddr(s string) string {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	raw, err2 := hex.DecodeString(h)
	if !ok || err != nil || err2 != nil || (len(raw) != 4 && len(raw) != 16) {
		return ""
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 { // each 32-bit word is in host (little-endian) order
		ip[i], ip[i+1], ip[i+2], ip[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if len(raw) == 16 {
			ip = net.IPv6loopback
		}
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10))
}

// askDevTools sends GET /json/version to addr and returns the start of the answer.
func askDevTools(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "GET /json/version HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr) // Chromium answers HTTP/1.1 only
	b, _ := io.ReadAll(io.LimitReader(c, 2048))
	return string(b)
}

// argValue returns the value of a --flag= argument of pid's command line.
func argValue(pid int, prefix string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	for _, a := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v
		}
	}
	return ""
}

// socketInodes returns the inodes of the sockets the processes hold open.
func socketInodes(pids []int) map[string]bool {
	inodes := map[string]bool{}
	for _, pid := range pids {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	return inodes
}

func countOurs(ls []listener, ours map[string]bool) int {
	n := 0
	for _, l := range ls {
		if ours[l.Inode] {
			n++
		}
	}
	return n
}
