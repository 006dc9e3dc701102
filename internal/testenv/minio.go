package testenv

import (
	"context"
	"errors"
	"fmt"
	"go/build"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// MinIO is a MinIO server of one test's own, on loopback, for tests that stop
// or break object storage: the shared one on :9000 is never touched. Its data
// directory outlives Stop, so Start brings the same objects back on the same
// address.
type MinIO struct {
	S3
	t       testing.TB
	bin     string
	dir     string
	console string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// MinIOBin is the MinIO server binary: SNAPQ_MINIO_BIN, or minio in
// $GOPATH/bin where scripts/services.sh builds it.
func MinIOBin() string {
	return Getenv("SNAPQ_MINIO_BIN", filepath.Join(build.Default.GOPATH, "bin", "minio"))
}

// StartMinIO starts a MinIO server on free loopback ports with a data
// directory in t.TempDir(), waits until it is live and stops it in
// t.Cleanup. A missing binary fails the test under CI=true.
func StartMinIO(t testing.TB) *MinIO {
	t.Helper()
	bin := MinIOBin()
	if _, err := os.Stat(bin); err != nil {
		Unavailable(t, "minio server binary", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	console, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := &MinIO{
		S3:      S3{Endpoint: "127.0.0.1:" + port, AccessKey: "chaos" + RandomSuffix(3), SecretKey: "chaos-secret-" + RandomSuffix(8)},
		t:       t,
		bin:     bin,
		dir:     filepath.Join(dir, "data"),
		console: "127.0.0.1:" + console,
		logPath: filepath.Join(dir, "minio.log"),
	}
	t.Cleanup(func() {
		m.Stop(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("--- own minio log (last 2 KiB) ---\n%s", m.Log(2048))
		}
	})
	m.Start()
	return m
}

// Start starts the server (again) and waits up to 30 s until it is live.
func (m *MinIO) Start() {
	m.t.Helper()
	if m.cmd != nil {
		m.t.Fatal("minio: Start while running")
	}
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		m.t.Fatal(err)
	}
	cmd := exec.Command(m.bin, "server", m.dir, "--address", m.Endpoint, "--console-address", m.console, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+m.AccessKey, "MINIO_ROOT_PASSWORD="+m.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		m.t.Fatalf("start minio: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	m.cmd, m.done = cmd, done
	if err := m.waitLive(30 * time.Second); err != nil {
		m.t.Fatalf("%v\n%s", err, m.Log(2048))
	}
}

// Stop sends sig to the server and waits for it to exit (killing it after
// 10 s). It does nothing when the server is not running.
func (m *MinIO) Stop(sig syscall.Signal) {
	if m.cmd == nil {
		return
	}
	stopProcess(m.cmd.Process, m.done, sig, 10*time.Second)
	m.cmd, m.done = nil, nil
}

func (m *MinIO) waitLive(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-m.done:
			return errors.New("minio exited while starting")
		default:
		}
		resp, err := http.Get("http://" + m.Endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("minio on %s not live after %s", m.Endpoint, timeout)
}

// Log returns the last n bytes of the server's log.
func (m *MinIO) Log(n int) string {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// ObjectInfo is what ListObjects tells of one object.
type ObjectInfo struct {
	Key  string
	Size int64
}

// ListObjects lists every object in bucket, sorted by key. A missing bucket
// is an empty list.
func ListObjects(ctx context.Context, mc *minio.Client, bucket string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			if minio.ToErrorResponse(o.Err).Code == "NoSuchBucket" {
				return nil, nil
			}
			return nil, o.Err
		}
		out = append(out, ObjectInfo{Key: o.Key, Size: o.Size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
