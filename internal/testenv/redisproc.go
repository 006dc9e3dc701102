package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server of one test, on a loopback port and a data
// directory of its own, for tests that restart, flush or break Redis: the
// machine's shared Redis (RedisAddr) must never be hurt by one test.
// Persistence is the AOF only (appendonly yes, no RDB snapshots), as the
// service ships it.
type RedisServer struct {
	Addr string // 127.0.0.1:<port>
	Dir  string // data directory (AOF), kept across Stop and Start
	bin  string
	port string
	// args replace the persistence settings of Start (redisha.go: replicas,
	// cluster nodes, sentinels); conf, when set, is the config file given first.
	args []string
	conf string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedisServer starts a redis-server for the test and stops it, and
// removes its data, in t.Cleanup. Call it before starting processes that use
// it, so it outlives them. A missing redis-server fails the test under
// CI=true and skips it elsewhere.
func StartRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	return startRedisServer(t, "", nil)
}

// startRedisServer is StartRedisServer with a config file (conf, "" for none)
// and args that replace the default persistence settings (nil: the defaults).
func startRedisServer(t testing.TB, conf string, args []string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath(Getenv("SNAPQ_REDIS_SERVER_BIN", "redis-server"))
	if err != nil {
		Unavailable(t, "redis-server", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "snapq-redis-")
	if err != nil {
		t.Fatal(err)
	}
	r := &RedisServer{Addr: "127.0.0.1:" + port, Dir: dir, bin: bin, port: port, args: args}
	if conf != "" {
		if r.conf, err = writeConf(dir, conf); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		r.Stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("--- redis-server log (last 2 KiB) ---\n%s", tail(filepath.Join(dir, "redis.log"), 2048))
		}
		os.RemoveAll(dir)
	})
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// URL is the server's database 0 as SNAPQ_REDIS_URL wants it.
func (r *RedisServer) URL() string { return "redis://" + r.Addr + "/0" }

// Client is a go-redis client of database 0; the caller closes it.
func (r *RedisServer) Client() *redis.Client { return redis.NewClient(&redis.Options{Addr: r.Addr}) }

// Start starts the server (again) on its port and data directory and waits
// until it answers PING with its AOF loaded.
func (r *RedisServer) Start() error {
	if r.cmd != nil {
		return fmt.Errorf("redis-server on %s is already running", r.Addr)
	}
	logf, err := os.OpenFile(filepath.Join(r.Dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	args := []string{"--port", r.port, "--bind", "127.0.0.1", "--dir", r.Dir}
	if r.conf != "" {
		args = append([]string{r.conf}, args...)
	}
	if r.args == nil {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
			"--maxmemory-policy", "noeviction", "--protected-mode", "yes")
	}
	cmd := exec.Command(r.bin, append(args, r.args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	r.cmd, r.done = cmd, done

	c := r.Client()
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			r.cmd = nil
			return fmt.Errorf("redis-server on %s exited: %s", r.Addr, tail(filepath.Join(r.Dir, "redis.log"), 1024))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s not answering after 15 s: %w", r.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends sig (SIGTERM: a clean shutdown that rewrites nothing but
// flushes the AOF; SIGKILL: a crash) and waits for the exit, killing it after
// 15 s. It is a no-op when the server is not running.
func (r *RedisServer) Stop(sig syscall.Signal) {
	if r.cmd == nil {
		return
	}
	stopProcess(r.cmd.Process, r.done, sig, 15*time.Second)
	r.cmd = nil
}

// tail returns the last n bytes of a file, trimmed.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
