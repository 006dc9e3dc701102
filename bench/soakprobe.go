package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// probe reads what the soak watches of the worker from /proc, its pprof
// endpoint, /dev/shm and the worker's private temporary directory.
//
// The worker's Chromium processes are found two ways, because neither alone
// is enough: descendants of the worker (leakless, the browser, its zygotes
// and renderers), and processes whose environment carries the soak's TMPDIR
// (capture passes TMPDIR to Chromium, so crashpad handlers, which Chromium
// reparents to init, and any orphan of a killed browser are still found).
// The machine is shared: other worktrees run Chromium too, and this is what
// tells ours apart.
type probe struct {
	worker int    // worker pid
	api    int    // api pid (it has the soak's TMPDIR too; not counted)
	tmp    string // the worker's TMPDIR
	pprof  string // http://host:port of the worker's pprof
}

// sample is one reading of the worker.
type sample struct {
	at         time.Duration  // since the load started
	done       int            // pages final
	pssMiB     float64        // worker + its Chromium processes
	goroutines int            // -1 when pprof did not answer
	fds        int            // the worker's open file descriptors
	chromium   int            // Chromium processes (browser, helpers, crashpad)
	shm        int            // entries in /dev/shm
	tmp        int            // entries in the worker's TMPDIR
	fdKinds    map[string]int // the worker's fds by kind (socket, pipe, anon, file)
	procKinds  map[string]int // Chromium processes by --type (browser, renderer, ...)
}

func (p probe) take(at time.Duration, done int) sample {
	set, chromium := p.processes()
	pss := 0.0
	kinds := map[string]int{}
	for _, pid := range set {
		pss += pssKiB(pid)
		if k := chromiumKind(pid); k != "" {
			kinds[k]++
		}
	}
	return sample{at: at, done: done, pssMiB: pss / 1024, goroutines: p.goroutines(), fds: countDir(fmt.Sprintf("/proc/%d/fd", p.worker)),
		chromium: chromium, shm: countDir("/dev/shm"), tmp: countDir(p.tmp), fdKinds: fdKinds(p.worker), procKinds: kinds}
}

// chromiumKind is a Chromium process's --type ("browser" without one), or ""
// for other processes.
func chromiumKind(pid int) string {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	name := strings.TrimSpace(string(comm))
	if !strings.HasPrefix(name, "chrom") {
		return ""
	}
	if name != "chromium" && name != "chrome" {
		return name // chrome_crashpad
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	// Chromium rewrites its argv into one space-separated string.
	kind, sub := "browser", ""
	for _, arg := range strings.Fields(strings.ReplaceAll(string(cmd), "\x00", " ")) {
		if t, ok := strings.CutPrefix(arg, "--type="); ok {
			kind = t
		}
		if t, ok := strings.CutPrefix(arg, "--utility-sub-type="); ok {
			sub = "(" + t + ")"
		}
	}
	return kind + sub
}

// fdKinds counts a process's open files by what they point at; TCP sockets
// by their peer's port (5432 Postgres, 6379 Redis, 9000 MinIO, others are
// Chromium's DevTools, the egress proxy and the fixture sites).
func fdKinds(pid int) map[string]int {
	peers := tcpPeers(pid)
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	out := map[string]int{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		kind := "file"
		switch {
		case strings.HasPrefix(target, "socket:"):
			kind = "socket"
			if port, ok := peers[strings.Trim(strings.TrimPrefix(target, "socket:"), "[]")]; ok {
				kind = "tcp:" + port
			}
		case strings.HasPrefix(target, "pipe:"):
			kind = "pipe"
		case strings.HasPrefix(target, "anon_inode:"):
			kind = "anon"
		}
		out[kind]++
	}
	return out
}

// proc is one process as /proc/<pid>/stat shows it.
type proc struct {
	ppid int
	comm string
}

// procTable reads every process's parent and command from /proc, and the
// children of each pid.
func procTable() (procs map[int]proc, children map[int][]int) {
	procs, children = map[int]proc{}, map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		s := string(stat)
		i, j := strings.IndexByte(s, '('), strings.LastIndex(s, ") ")
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+2:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = proc{ppid: ppid, comm: s[i+1 : j]}
		children[ppid] = append(children[ppid], pid)
	}
	return procs, children
}

// processes returns the worker, its descendants and the Chromium processes
// carrying its TMPDIR, and how many of those are Chromium.
func (p probe) processes() (set []int, chromium int) {
	procs, children := procTable()
	seen := map[int]bool{}
	queue := []int{p.worker}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		queue = append(queue, children[pid]...)
	}
	marker := []byte("TMPDIR=" + p.tmp + "\x00")
	for pid, pr := range procs {
		if seen[pid] || pid == p.api || !strings.HasPrefix(pr.comm, "chrom") {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && bytes.Contains(env, marker) {
			seen[pid] = true
		}
	}
	delete(seen, 0)
	for pid := range seen {
		if _, alive := procs[pid]; !alive {
			continue
		}
		set = append(set, pid)
		if strings.HasPrefix(procs[pid].comm, "chrom") {
			chromium++
		}
	}
	return set, chromium
}

// goroutines reads the total from the worker's goroutine profile
// ("goroutine profile: total N" on the first line with debug=1).
func (p probe) goroutines() int {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(p.pprof + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	if err != nil && line == "" {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total")))
	if err != nil {
		return -1
	}
	return n
}

func countDir(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	return len(entries)
}

func listDir(dir string) map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// chromiumShm matches what Chromium (or snapq) would name in /dev/shm. Other
// entries there belong to other programs on the machine (Postgres creates and
// drops PostgreSQL.N segments as it runs queries): those are reported, not
// held against the soak.
var chromiumShm = regexp.MustCompile(`(?i)chrom|snapq`)

// shmLeftovers returns the Chromium-named entries of /dev/shm not in before.
func shmLeftovers(before map[string]bool) []string {
	var out []string
	for name := range listDir("/dev/shm") {
		if !before[name] && chromiumShm.MatchString(name) {
			out = append(out, name)
		}
	}
	return out
}

// tmpLeftovers returns the entries of the worker's TMPDIR not in before and
// not in use: a profile (snapq-chromium-*) is in use while the process its
// SingletonLock names is alive, and so is the socket directory its
// SingletonSocket points into. With before nil, only leakless's extracted
// binary (leakless-*) is expected to stay.
func tmpLeftovers(dir string, before map[string]bool) []string {
	now := listDir(dir)
	live := map[string]bool{}
	for name := range now {
		if !strings.HasPrefix(name, "snapq-chromium-") {
			continue
		}
		lock, err := os.Readlink(filepath.Join(dir, name, "SingletonLock")) // "<host>-<pid>"
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(lock[strings.LastIndexByte(lock, '-')+1:])
		if err != nil || syscall.Kill(pid, 0) != nil {
			continue
		}
		live[name] = true
		if sock, err := os.Readlink(filepath.Join(dir, name, "SingletonSocket")); err == nil {
			live[filepath.Base(filepath.Dir(sock))] = true
		}
	}
	var out []string
	for name := range now {
		switch {
		case live[name], before[name]:
		case before == nil && strings.HasPrefix(name, "leakless-"):
		default:
			out = append(out, name)
		}
	}
	return out
}

// tcpPeers maps the socket inodes of pid's network namespace to the remote
// port ("*" for listeners), from /proc/<pid>/net/tcp{,6}.
func tcpPeers(pid int) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fl := strings.Fields(line)
			if len(fl) < 10 {
				continue
			}
			port := "*"
			if fl[3] != "0A" { // not LISTEN
				if i := strings.LastIndexByte(fl[2], ':'); i >= 0 {
					if n, err := strconv.ParseUint(fl[2][i+1:], 16, 16); err == nil {
						port = strconv.FormatUint(n, 10)
					}
				}
			}
			out[fl[9]] = port
		}
	}
	return out
}
