//go:build linux && amd64

package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// There is no container runtime here, so the profile is applied the way one would: compiled
// to a seccomp-bpf filter (allow the listed syscalls of x86_64, EPERM for anything else,
// other architectures included), installed with no_new_privs in a process of an
// unprivileged user, which then executes Chromium with its sandbox on.

// filterEnv makes the test binary install the filter written to the named file and execute
// its arguments (TestMain).
const filterEnv = "SNAPQ_DEPLOY_SECCOMP_FILTER"

func TestMain(m *testing.M) {
	if f := os.Getenv(filterEnv); f != "" {
		fmt.Fprintln(os.Stderr, execFiltered(f, os.Args[1:]))
		os.Exit(111)
	}
	os.Exit(m.Run())
}

// Under the profile, as an unprivileged user, Chromium builds its sandbox and renders a
// page. Without unshare and chroot (the control) it cannot, so the filter is in force.
func TestChromiumSandboxUnderSeccompProfile(t *testing.T) {
	chrome := "/usr/bin/chromium"
	if _, err := os.Stat(chrome); err != nil {
		t.Skipf("no %s: %v", chrome, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run Chromium as snapq-chrome")
	}
	u, err := user.Lookup("snapq-chrome")
	if err != nil {
		t.Skipf("no user snapq-chrome: %v", err)
	}
	_, allowed := loadSeccomp(t)
	numbers := syscallNumbers(t)

	ok := runFiltered(t, u, chrome, numbers, allowed)
	if !strings.Contains(ok.out, "sandboxed-page") || ok.err != nil {
		t.Fatalf("chromium under the profile: %v, stdout %.300q; stderr ends %q", ok.err, ok.out, tail(ok.stderr))
	}
	control := map[string]bool{}
	for n := range allowed {
		control[n] = n != "unshare" && n != "chroot"
	}
	bad := runFiltered(t, u, chrome, numbers, control)
	if strings.Contains(bad.out, "sandboxed-page") {
		t.Fatalf("chromium rendered without unshare and chroot: the filter is not in force (stderr %q)", tail(bad.stderr))
	}
	t.Logf("with the profile: rendered; without unshare and chroot: %v, stderr ends %q", bad.err, tail(bad.stderr))
}

type runResult struct {
	out, stderr string
	err         error
}

// runFiltered runs Chromium headless with its sandbox as u, under a filter allowing allowed.
func runFiltered(t *testing.T, u *user.User, chrome string, numbers map[string]uint32, allowed map[string]bool) runResult {
	t.Helper()
	dir, err := os.MkdirTemp("", "snapq-seccomp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "filtered")
	prog := filepath.Join(dir, "filter.bpf")
	profile := filepath.Join(dir, "profile")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, compileFilter(numbers, allowed), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, profile} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, chrome, "--headless", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+profile, "--dump-dom", "data:text/html,<p>sandboxed-page</p>")
	cmd.Env = []string{filterEnv + "=" + prog, "HOME=" + profile, "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=" + dir}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
		Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = errors.Join(errors.New("timed out"), <-done)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind
	return runResult{out: stdout.String(), stderr: stderr.String(), err: err}
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = s[len(s)-600:]
	}
	return s
}

func copyExecutable(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// syscallNumbers reads x86_64 syscall numbers from golang.org/x/sys's table, named as in
// seccomp profiles.
func syscallNumbers(t *testing.T) map[string]uint32 {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("go list golang.org/x/sys: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "unix", "zsysnum_linux_amd64.go"))
	if err != nil {
		t.Fatal(err)
	}
	nums := map[string]uint32{}
	for _, m := range regexp.MustCompile(`\bSYS_([A-Z0-9_]+)\s*=\s*(\d+)`).FindAllSubmatch(src, -1) {
		n, _ := strconv.ParseUint(string(m[2]), 10, 32)
		nums[strings.ToLower(string(m[1]))] = uint32(n)
	}
	return nums
}

// compileFilter returns a classic BPF program: on x86_64, each allowed syscall number
// returns ALLOW; everything else, other architectures and the x32 ABI included, EPERM.
func compileFilter(numbers map[string]uint32, allowed map[string]bool) []byte {
	const (
		ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		deny  = unix.SECCOMP_RET_ERRNO | 1 // EPERM
		allow = unix.SECCOMP_RET_ALLOW
	)
	prog := []unix.SockFilter{
		{Code: ldAbs, K: 4}, // seccomp_data.arch
		{Code: jeq, Jt: 1, Jf: 0, K: unix.AUDIT_ARCH_X86_64},
		{Code: ret, K: deny},
		{Code: ldAbs, K: 0}, // seccomp_data.nr
	}
	for name, ok := range allowed {
		if nr, known := numbers[name]; ok && known {
			prog = append(prog, unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: nr}, unix.SockFilter{Code: ret, K: allow})
		}
	}
	prog = append(prog, unix.SockFilter{Code: ret, K: deny})
	return unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), len(prog)*int(unsafe.Sizeof(prog[0])))
}

// execFiltered installs the filter in file (no_new_privs first, as a runtime does for an
// unprivileged container) on every thread and executes args; it returns only on failure.
func execFiltered(file string, args []string) error {
	raw, err := os.ReadFile(file)
	if err != nil || len(raw) == 0 || len(args) == 0 {
		return fmt.Errorf("filter %s, args %q: %v", file, args, err)
	}
	runtime.LockOSThread()
	prog := unsafe.Slice((*unix.SockFilter)(unsafe.Pointer(&raw[0])), len(raw)/int(unsafe.Sizeof(unix.SockFilter{})))
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return syscall.Exec(args[0], args, os.Environ())
}
