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
	mount   string // the tmpfs of StartMinIOOnTmpfs, or ""
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
	return startMinIO(t, t.TempDir())
}

// StartMinIOOnTmpfs is StartMinIO with its data on a tmpfs of its own of
// size bytes, so a test can fill the disk (FillDisk) and free it again
// (FreeDisk). The tmpfs is unmounted in t.Cleanup after the server stopped.
// Mounting needs root (CAP_SYS_ADMIN): where it is refused, the test fails
// under CI=true and skips elsewhere.
func StartMinIOOnTmpfs(t testing.TB, size int64) *MinIO {
	t.Helper()
	if _, err := os.Stat(MinIOBin()); err != nil {
		Unavailable(t, "minio server binary", err)
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		Unavailable(t, "a tmpfs mount for the test's MinIO (run as root)", err)
	}
	t.Cleanup(func() { unmount(t, mnt) }) // after the server's own cleanup: cleanups run last first
	m := startMinIO(t, mnt)
	m.mount = mnt
	return m
}

// unmount unmounts a tmpfs, retrying while it is busy, then detaching it.
func unmount(t testing.TB, mnt string) {
	for range 50 {
		if err := syscall.Unmount(mnt, 0); err == nil || errors.Is(err, syscall.EINVAL) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
		t.Errorf("unmount %s: %v", mnt, err)
	}
}

// FillDisk writes a file next to the server's data on its tmpfs so that only
// leave bytes stay free. MinIO refuses writes (XMinioStorageFull, 507) once
// a write would leave less than 1% of the drive free.
func (m *MinIO) FillDisk(leave int64) error {
	if m.mount == "" {
		return errors.New("minio: FillDisk needs StartMinIOOnTmpfs")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(m.mount, &st); err != nil {
		return err
	}
	fill := int64(st.Bavail)*st.Bsize - leave
	if fill <= 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(m.mount, "filler"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for fill > 0 {
		n := min(fill, int64(len(chunk)))
		if _, err := f.Write(chunk[:n]); err != nil {
			return fmt.Errorf("fill %s: %w", m.mount, err)
		}
		fill -= n
	}
	return nil
}

// FreeDisk removes what FillDisk wrote.
func (m *MinIO) FreeDisk() error {
	if m.mount == "" {
		return errors.New("minio: FreeDisk needs StartMinIOOnTmpfs")
	}
	return os.Remove(filepath.Join(m.mount, "filler"))
}

// startMinIO starts a server whose data and log are under dir.
func startMinIO(t testing.TB, dir string) *MinIO {
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
