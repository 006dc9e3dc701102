package capture

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/launcher/flags"
)

// Chromium is started here rather than by rod's launcher, which cannot start a process as
// another user. Chromium's sandbox (Debian's build: a user namespace for each renderer,
// plus a seccomp-bpf filter) refuses to run as root, so a worker running as root starts
// Chromium as Config.ChromeUser; a worker that is not root starts it as itself. The command
// line, environment and working directory are the launcher's (Config.newLauncher); CDP goes
// over Chromium's DevTools pipe (pipe.go).

// Bounds on starting Chromium and reading its stderr.
const (
	launchTimeout     = 60 * time.Second // until DevTools answers, on top of the caller's ctx
	launchStderrLimit = 1 << 20          // bytes of stderr searched for the URL
	launchStderrTail  = 2 << 10          // bytes of stderr kept for the error of a failed start
)

// devToolsPrefix starts the line in which Chromium prints its browser endpoint (only with
// devtoolsPort).
const devToolsPrefix = "DevTools listening on "

// credential is the user and group Chromium is started as.
type credential struct{ uid, gid uint32 }

// chromeCredential returns who a process running with effective uid euid starts Chromium
// as: nil means as itself (not root, or root without a sandbox).
func (c Config) chromeCredential(euid int) (*credential, error) {
	if euid != 0 || c.NoSandbox {
		return nil, nil
	}
	u, err := user.Lookup(c.ChromeUser)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("chromium user %q does not exist: as root the worker starts Chromium as that user so Chromium can sandbox the pages it renders; "+
				"create it (useradd --system --no-create-home --shell /usr/sbin/nologin %s), set SNAPQ_CHROME_USER to another unprivileged user, "+
				"or set SNAPQ_CHROME_NO_SANDBOX=true to run pages without Chromium's sandbox", c.ChromeUser, c.ChromeUser)
		}
		return nil, fmt.Errorf("chromium user %q: %w", c.ChromeUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("chromium user %q: %w", c.ChromeUser, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("chromium user %q is root: Chromium cannot sandbox itself as root; set SNAPQ_CHROME_USER to an unprivileged user", c.ChromeUser)
	}
	return &credential{uid: uint32(uid), gid: uint32(gid)}, nil
}

// chromeProcess is a Chromium started by launchChromium.
type chromeProcess struct {
	pid  int
	dir  string        // its user-data-dir
	exit chan struct{} // closed when the process has exited and been reaped
}

// PID returns the browser process's pid, which is also its process group's id.
func (p *chromeProcess) PID() int { return p.pid }

// Cleanup waits for the process to exit and removes its user-data-dir.
func (p *chromeProcess) Cleanup() {
	<-p.exit
	_ = os.RemoveAll(p.dir)
}

// launchChromium starts Chromium with cfg's command line and profile dir, as the user
// chromeCredential names (dir is given to that user), and returns it with a CDP connection
// to it: its DevTools pipe (pipe.go), or with devtoolsPort (tests and measurements only) a
// WebSocket to the port it prints on stderr. ctx bounds the start only; a Chromium that does not answer in time is
// killed.
func launchChromium(ctx context.Context, cfg Config, dir string, devtoolsPort bool) (*chromeProcess, transport, error) {
	cmd, err := chromeCommand(cfg, dir, devtoolsPort)
	if err != nil {
		return nil, nil, err
	}
	var pipes *devtoolsPipes
	if !devtoolsPort {
		if pipes, err = newDevtoolsPipes(); err != nil {
			return nil, nil, fmt.Errorf("create the DevTools pipes: %w", err)
		}
		cmd.ExtraFiles = pipes.child // Chromium's fds 3 and 4
	}
	p, out, err := startChrome(cmd, cfg)
	if pipes != nil {
		pipes.closeChild()
		if err != nil {
			_ = pipes.conn.Close()
		}
	}
	if err != nil {
		return nil, nil, err
	}
	conn, err := p.connect(ctx, cfg, out, pipes)
	if err != nil {
		killProcess(p.pid)
		<-p.exit
		select {
		case <-out.done:
		case <-time.After(time.Second): // a child may hold stderr a moment longer
		}
		if tail := out.tail(); tail != "" {
			err = fmt.Errorf("%w; its stderr ends: %s", err, tail)
		}
		return nil, nil, err
	}
	return p, conn, nil
}

// chromeCommand builds the command that starts Chromium as chromeCredential says, giving dir
// to that user.
func chromeCommand(cfg Config, dir string, devtoolsPort bool) (*exec.Cmd, error) {
	cred, err := cfg.chromeCredential(os.Geteuid())
	if err != nil {
		return nil, err
	}
	if err := writePreferences(dir, cred); err != nil { // profile.go
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.uid), int(cred.gid)); err != nil {
			return nil, fmt.Errorf("give the profile dir to %s: %w", cfg.ChromeUser, err)
		}
	}
	attr, err := sysProcAttr(cred)
	if err != nil {
		return nil, err
	}
	l := cfg.newLauncher(dir)
	if devtoolsPort {
		useDevtoolsPort(l)
	}
	env, _ := l.GetFlags(flags.Env)
	cmd := exec.Command(l.Get(flags.Bin), l.FormatArgs()...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = attr
	return cmd, nil
}

// startChrome starts cmd and returns the process with the reader of its stderr.
func startChrome(cmd *exec.Cmd, cfg Config) (*chromeProcess, *stderrReader, error) {
	// stdout stays /dev/null; stderr is a pipe read below. Its reader is ours, so
	// Wait does not wait for Chromium's children to close their copies of it.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = w

	p := &chromeProcess{dir: cmd.Dir, exit: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal (Linux) is sent when the thread that started the
		// process ends, not the process: this goroutine holds its thread until Chromium
		// exits, and a thread locked by a goroutine that unlocks is never ended.
		runtime.LockOSThread()
		// A niced thread is not given back: it ends with this goroutine (nice.go).
		niced := cfg.Nice > 0 && cfg.RemoteURL == ""
		if !niced {
			defer runtime.UnlockOSThread()
		}
		err := niceThread(cfg.Nice, niced)
		if err == nil {
			err = cmd.Start()
		}
		started <- err
		if err == nil {
			_ = cmd.Wait()
		}
		close(p.exit)
	}()
	err = <-started
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Credential != nil && errors.Is(err, fs.ErrPermission) {
			// The usual cause: a directory on the way to the profile (TMPDIR) that
			// only root may enter.
			return nil, nil, fmt.Errorf("start %s as %s: %w (can that user reach %s and %s? every directory above the profile, "+
				"TMPDIR included, must be searchable by it: chmod o+x, or set TMPDIR to such a directory)",
				cmd.Path, cfg.ChromeUser, err, cmd.Path, cmd.Dir)
		}
		return nil, nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p.pid = cmd.Process.Pid
	return p, newStderrReader(r), nil
}

// connect waits until the started Chromium answers on its DevTools pipe (pipes not nil) or
// prints its DevTools URL and accepts a WebSocket to it, within ctx and launchTimeout.
func (p *chromeProcess) connect(ctx context.Context, cfg Config, out *stderrReader, pipes *devtoolsPipes) (transport, error) {
	type answer struct {
		conn transport
		err  error
	}
	ready := make(chan answer, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if pipes != nil {
			ready <- answer{pipes.conn, pipes.conn.handshake()}
			return
		}
		select {
		case u := <-out.url:
			ws := &cdp.WebSocket{}
			if err := ws.Connect(cctx, u, nil); err != nil {
				ready <- answer{nil, fmt.Errorf("connect to %s: %w", u, err)}
				return
			}
			ready <- answer{ws, nil}
		case <-cctx.Done():
			ready <- answer{nil, cctx.Err()}
		}
	}()
	timer := time.NewTimer(launchTimeout)
	defer timer.Stop()
	var err error
	select {
	case a := <-ready:
		if a.err != nil {
			if pipes != nil {
				_ = pipes.conn.Close()
			}
			return nil, a.err
		}
		return a.conn, nil
	case <-p.exit:
		err = errors.New("chromium exited")
	case <-out.done:
		err = fmt.Errorf("chromium's stderr ended, or passed %d KiB, before its DevTools answered", launchStderrLimit>>10)
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("chromium's DevTools did not answer in %s", launchTimeout)
	}
	cancel()
	if pipes != nil {
		_ = pipes.conn.Close() // unblocks the handshake
	}
	if a := <-ready; a.err == nil {
		_ = a.conn.Close()
	}
	return nil, err
}

// stderrReader reads a starting Chromium's stderr: it sends the DevTools URL once, keeps
// the end of what came before it for errors, and then discards the rest until EOF.
type stderrReader struct {
	url  chan string
	done chan struct{} // closed at EOF or when the search gave up

	mu   sync.Mutex
	last []byte
}

func newStderrReader(r *os.File) *stderrReader {
	s := &stderrReader{url: make(chan string, 1), done: make(chan struct{})}
	go func() {
		defer func() { _ = r.Close() }()
		found := false
		br := bufio.NewReaderSize(io.LimitReader(r, launchStderrLimit), 4096)
		for !found {
			line, err := br.ReadSlice('\n')
			s.keep(line)
			if i := bytes.Index(line, []byte(devToolsPrefix)); i >= 0 {
				u := strings.TrimSpace(string(line[i+len(devToolsPrefix):]))
				if strings.HasPrefix(u, "ws://") {
					s.url <- u
					found = true
				}
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				break // EOF, or the limit: no URL
			}
		}
		if !found {
			close(s.done)
		}
		_, _ = io.Copy(io.Discard, r)
		if found {
			close(s.done)
		}
	}()
	return s
}

func (s *stderrReader) keep(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = append(s.last, b...)
	if n := len(s.last) - launchStderrTail; n > 0 {
		s.last = append(s.last[:0], s.last[n:]...)
	}
}

func (s *stderrReader) tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(s.last), "?"))
}

// logStarted logs a launched Chromium: who it runs as and whether its sandbox is on.
func (inst *instance) logStarted() {
	cfg := inst.cfg
	as := "worker's user"
	if os.Geteuid() == 0 {
		as = "root"
		if !cfg.NoSandbox {
			as = cfg.ChromeUser
		}
	}
	inst.log.Info("chromium started", "bin", cfg.ChromeBin, "pid", inst.proc.PID(), "user", as,
		"sandbox", !cfg.NoSandbox, "site_isolation", cfg.SiteIsolation)
	if cfg.NoSandbox {
		inst.log.Warn("chromium runs without its sandbox (SNAPQ_CHROME_NO_SANDBOX=true): pages are rendered in processes with the browser's privileges, and a renderer exploit reaches the worker's files and network")
	}
}
