package e2e

// Issue 13 item 1: a worker driving a browser it did not launch (SNAPQ_CHROME_URL), with
// the egress guard holding for it, and surviving that browser's restart.

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
	"github.com/snapq/snapq/internal/testenv"
)

// remoteChromium is a Chromium started the way an operator starts a browser pool
// member: headless, listening for CDP on 127.0.0.1:port, none of snapq's flags but the
// WebRTC policy the worker's egress check demands (no CDP call can set it).
type remoteChromium struct {
	t    *testing.T
	port string
	dir  string
	cmd  *exec.Cmd
}

func startRemoteChromium(t *testing.T, port string) *remoteChromium {
	t.Helper()
	chrome := testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium")
	if _, err := os.Stat(chrome); err != nil {
		testenv.Unavailable(t, "chromium", err)
	}
	dir, err := os.MkdirTemp("", "snapq-e2e-remote-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	r := &remoteChromium{t: t, port: port, dir: dir}
	t.Cleanup(func() {
		r.kill()
		_ = os.RemoveAll(dir)
	})
	r.start(chrome)
	return r
}

func (r *remoteChromium) start(chrome string) {
	r.t.Helper()
	args := []string{"--headless", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=" + r.port,
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir=" + r.dir,
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "--webrtc-ip-handling-policy=disable_non_proxied_udp"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium cannot sandbox itself as root
	}
	cmd := exec.Command(chrome, args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + r.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // killed as a group with its children
	stderr, err := cmd.StderrPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start chromium: %v", err)
	}
	r.cmd = cmd
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "DevTools listening on ") {
				close(up)
				break
			}
		}
		for sc.Scan() { // keep the pipe drained
		}
	}()
	select {
	case <-up:
	case <-time.After(60 * time.Second):
		r.t.Fatal("chromium did not print its DevTools URL within 60 s")
	}
}

// kill SIGKILLs the browser and its children and waits for them.
func (r *remoteChromium) kill() {
	if r.cmd == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	_ = r.cmd.Wait()
	r.cmd = nil
}

// tcpCanary counts the connections it accepts on 127.0.0.1.
type tcpCanary struct {
	addr  string
	conns atomic.Int64
}

func startTCPCanary(t *testing.T) *tcpCanary {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	c := &tcpCanary{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.conns.Add(1)
			_ = conn.Close()
		}
	}()
	return c
}

// canaryFixtureSite serves the fixture site on 127.0.0.2 plus /reach, a page whose image,
// fetch and redirected image aim at the canary, and /to-canary, a redirect to it.
func canaryFixtureSite(t *testing.T, canary string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailable(t, "a listener on 127.0.0.2", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", fixtures.Handler())
	mux.HandleFunc("/reach", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>reach %s</title><h1>reach</h1>
<img src="http://%[2]s/img.png"><img src="/to-canary">
<script>fetch("http://%[2]s/fetch").catch(() => {});</script>`, r.URL.Query().Get("i"), canary)
	})
	mux.HandleFunc("/to-canary", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+canary+"/redirected", http.StatusFound)
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// A worker with SNAPQ_CHROME_URL and no Chromium of its own: its egress proxies listen on
// 127.0.0.3 (SNAPQ_EGRESS_PROXY_LISTEN/ADVERTISE) and the browser reaches the pages only
// through them, so a canary on 127.0.0.1 that every page aims at is never reached and a
// redirect to it fails its job as blocked_address. The browser is killed mid-batch and
// started again on the same port: the jobs it was running fail as retryable, the ones
// that find it down wait (browser_unavailable, not a failure), and every job completes.
func TestRemoteBrowserPool(t *testing.T) {
	t.Parallel()
	canary := startTCPCanary(t)
	site := canaryFixtureSite(t, canary.addr)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	chrome := startRemoteChromium(t, port)
	s := startStack(t,
		"SNAPQ_CHROME_BIN=/nonexistent/chromium", // nothing launched locally
		"SNAPQ_CHROME_URL=http://127.0.0.1:"+port,
		"SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.2/32",
		"SNAPQ_EGRESS_PROXY_LISTEN=127.0.0.3:0",
		"SNAPQ_EGRESS_PROXY_ADVERTISE=127.0.0.3",
		"SNAPQ_MAX_RETRY=3",
	)
	const n = 12
	targets := []map[string]any{{"url": site + "/to-canary", "name": "redirected"}}
	for i := range n {
		url := site + "/reach?i=" + itoa(i)
		if i >= 2 {
			url = site + "/slow?ms=1500&i=" + itoa(i) // in flight when the browser dies
		}
		targets = append(targets, map[string]any{"url": url, "name": "p" + itoa(i)})
	}
	id := s.submit(map[string]any{"targets": targets, "options": map[string]any{"viewport": map[string]any{"width": 400, "height": 300}}})
	start := time.Now()

	// Kill the browser once some jobs are done and others are rendering.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var b batchResp
		s.do("GET", "/v1/batches/"+id, nil, &b)
		if b.Counts["succeeded"] >= 3 && b.Counts["running"] > 0 {
			t.Logf("killing the remote browser at %v", b.Counts)
			break
		}
		if b.Status == "completed" || time.Now().After(deadline) {
			t.Fatalf("no moment with jobs done and jobs running: %v", b.Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	chrome.kill()
	time.Sleep(2 * time.Second) // jobs meet the dead endpoint meanwhile
	chrome.start(testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium"))

	done := s.waitBatch(id, 3*time.Minute)
	t.Logf("batch done in %s: %v", time.Since(start).Round(time.Millisecond), done.Counts)
	var jobs struct {
		Jobs []jobResp `json:"jobs"`
	}
	s.do("GET", "/v1/batches/"+id+"/jobs?limit=100", nil, &jobs)
	if len(jobs.Jobs) != n+1 {
		t.Fatalf("%d jobs listed, want %d", len(jobs.Jobs), n+1)
	}
	retried := 0
	for _, j := range jobs.Jobs {
		if j.Attempts > 1 {
			retried++
		}
		if j.Name == "redirected" {
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "blocked_address" {
				t.Errorf("the redirect to 127.0.0.1: %s %+v, want failed blocked_address", j.Status, j.Error)
			}
			continue
		}
		if j.Status != "succeeded" {
			t.Errorf("job %s (%s): %s %+v after %d attempts", j.Name, j.URL, j.Status, j.Error, j.Attempts)
		}
		if strings.Contains(j.URL, "/reach") && (j.Result == nil || j.Result.BlockedRequests < 3) {
			t.Errorf("job %s: result %+v, want at least 3 blocked requests (image, redirected image, fetch)", j.Name, j.Result)
		}
	}
	if n := canary.conns.Load(); n != 0 {
		t.Errorf("the canary on 127.0.0.1 was reached %d times", n)
	}
	if retried == 0 {
		t.Error("no job was retried: the browser did not die under a running job")
	}
	lost := s.logCount("worker", "browser_unavailable")
	t.Logf("%d jobs retried; worker log lines with browser_unavailable: %d", retried, lost)
}

// The worker refuses to start when the remote browser cannot reach its egress proxies:
// here they listen on 127.0.0.3 but are advertised as 127.0.0.4, where nothing listens.
func TestRemoteBrowserUnreachableGuard(t *testing.T) {
	t.Parallel()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	startRemoteChromium(t, port)
	s := startStack(t, "SNAPQ_CHROME_BIN=/nonexistent/chromium", "SNAPQ_CHROME_URL=http://127.0.0.1:"+port,
		"SNAPQ_EGRESS_PROXY_LISTEN=127.0.0.3:0", "SNAPQ_EGRESS_PROXY_ADVERTISE=127.0.0.4")
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(s.procs.Log("worker", 8192), "worker:") && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond) // main prints "worker: <error>" and exits 1
	}
	log := s.procs.Log("worker", 8192)
	if !strings.Contains(log, "did not reach the egress proxy") {
		t.Fatalf("the worker did not refuse the browser for an unreachable guard; log:\n%s", log)
	}
}
