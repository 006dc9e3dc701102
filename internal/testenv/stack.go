package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// BuildBinaries builds cmd/api and cmd/worker from the module root into dir.
func BuildBinaries(root, dir string) error {
	// One go build of both: they compile and link side by side.
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/api", "./cmd/worker")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build api and worker: %w", err)
	}
	return nil
}

// NewSchema creates a fresh schema in the database at base and returns a URL
// whose search_path points at it (and whose commits skip the wait for the
// disk), and a function that drops it.
func NewSchema(ctx context.Context, base string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	schema := "t_" + RandomSuffix(6)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("create schema: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		drop()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	// A commit does not wait for its WAL to reach the disk: the shared
	// Postgres is never crashed by a test, and dozens of test schemas
	// migrating and committing at once otherwise queue on fsync.
	if !q.Has("synchronous_commit") {
		q.Set("synchronous_commit", "off")
	}
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// S3 is the test MinIO's address and credentials.
type S3 struct{ Endpoint, AccessKey, SecretKey string }

// LocalS3 reads SNAPQ_S3_* with the local stack's defaults.
func LocalS3() S3 {
	return S3{Getenv("SNAPQ_S3_ENDPOINT", "127.0.0.1:9000"), Getenv("SNAPQ_S3_ACCESS_KEY", "snapq"),
		Getenv("SNAPQ_S3_SECRET_KEY", "snapqsecret")}
}

// Client connects to MinIO and checks it answers.
func (s S3) Client(ctx context.Context) (*minio.Client, error) {
	mc, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, "")})
	if err != nil {
		return nil, err
	}
	if _, err := mc.ListBuckets(ctx); err != nil {
		return nil, err
	}
	return mc, nil
}

// RemoveBucket empties and removes a bucket.
func RemoveBucket(mc *minio.Client, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	objs := mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true})
	for range mc.RemoveObjects(ctx, bucket, objs, minio.RemoveObjectsOptions{}) {
	}
	_ = mc.RemoveBucket(ctx, bucket)
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}

// Procs runs snapq binaries as child processes with one environment.
type Procs struct {
	BinDir string
	LogDir string
	Env    []string
	// Credential, when set for a name, runs that process as another user
	// (the test must be root); its binary must be reachable by that user.
	Credential map[string]*syscall.Credential
	procs      map[string]*exec.Cmd
	done       map[string]chan struct{}
}

// Start starts bin/name, appending its output to LogDir/name.log.
func (p *Procs) Start(name string, args ...string) error {
	return p.StartAs(name, name, args...)
}

// StartAs starts bin/bin under another name (a second worker: "worker2"),
// logging to LogDir/name.log; Pid, Stop and Log take that name.
func (p *Procs) StartAs(name, bin string, args ...string) error {
	if p.procs == nil {
		p.procs, p.done = map[string]*exec.Cmd{}, map[string]chan struct{}{}
	}
	logf, err := os.OpenFile(filepath.Join(p.LogDir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(p.BinDir, bin), args...)
	cmd.Env = p.Env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = dieWithTest()
	if c := p.Credential[name]; c != nil {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Credential = c
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	p.procs[name], p.done[name] = cmd, done
	return nil
}

// Pid returns the process id of a running binary, or 0.
func (p *Procs) Pid(name string) int {
	if c := p.procs[name]; c != nil && c.Process != nil {
		return c.Process.Pid
	}
	return 0
}

// Stop sends sig and waits up to 45 s before killing.
func (p *Procs) Stop(name string, sig syscall.Signal) {
	cmd := p.procs[name]
	if cmd == nil {
		return
	}
	stopProcess(cmd.Process, p.done[name], sig, 45*time.Second)
	delete(p.procs, name)
}

// stopProcess sends sig to proc and waits until done is closed (the process was reaped),
// killing it after grace.
func stopProcess(proc *os.Process, done <-chan struct{}, sig syscall.Signal, grace time.Duration) {
	_ = proc.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = proc.Kill()
		<-done
	}
}

// StopAll stops every process with SIGTERM, all at once: each one's graceful
// stop overlaps the others' instead of adding to them.
func (p *Procs) StopAll() {
	var wg sync.WaitGroup
	for name, cmd := range p.procs {
		wg.Add(1)
		go func(proc *os.Process, done <-chan struct{}) {
			defer wg.Done()
			stopProcess(proc, done, syscall.SIGTERM, 45*time.Second)
		}(cmd.Process, p.done[name])
	}
	wg.Wait()
	clear(p.procs)
}

// Log returns the last n bytes of a process's log.
func (p *Procs) Log(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(p.LogDir, name+".log"))
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// WaitReady polls base/readyz until it answers 200.
func WaitReady(base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("api at " + base + " not ready after " + timeout.String())
}
