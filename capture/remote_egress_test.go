package capture

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/internal/testenv"
)

// startRemoteChromium starts a Chromium the way an operator would for RemoteURL, with
// none of this package's egress flags, and returns its http://host:port.
func startRemoteChromium(t *testing.T, extra ...string) string {
	t.Helper()
	needChromium(t)
	// Not t.TempDir: Chromium's children may still write into the profile for a moment after
	// the kill, which fails TempDir's own removal.
	dir, err := os.MkdirTemp("", "snapq-remote-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--headless", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir=" + dir}, extra...)
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	cmd := exec.Command(DefaultChromeBin, args...)
	cmd.Env = chromiumEnv(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // killed as a group: the browser and its children
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start remote chromium: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := os.RemoveAll(dir); err == nil || time.Now().After(deadline) {
				if err != nil {
					t.Errorf("remove the remote Chromium's profile: %v", err)
				}
				return
			}
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				found <- u
			}
		}
	}()
	select {
	case ws := <-found:
		host := strings.TrimPrefix(ws, "ws://")
		host, _, _ = strings.Cut(host, "/")
		return "http://" + host
	case <-time.After(20 * time.Second):
		t.Fatal("remote chromium did not print its DevTools URL")
		return ""
	}
}

// loopbackCanary listens on 127.0.0.1, TCP and UDP on the same port, and counts the
// connections and datagrams it receives; the guard must keep every one from happening.
type loopbackCanary struct {
	port  string
	conns atomic.Int64
}

func startLoopbackCanary(t *testing.T) *loopbackCanary {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	c := &loopbackCanary{}
	_, c.port, _ = net.SplitHostPort(ln.Addr().String())
	udp, err := net.ListenPacket("udp", "127.0.0.1:"+c.port)
	if err != nil {
		t.Fatalf("udp canary on the tcp canary's port: %v", err)
	}
	t.Cleanup(func() { _ = udp.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			c.conns.Add(1)
		}
	}()
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

// canarySite serves, on 127.0.0.2 (the only address the guard allows), a page whose
// fetch, image and WebRTC (STUN over UDP, TURN over TCP) all aim at the canary on
// 127.0.0.1.
func canarySite(t *testing.T, canaryPort string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailable(t, "a listener on 127.0.0.2", err)
	}
	canary := "127.0.0.1:" + canaryPort
	mux := http.NewServeMux()
	mux.HandleFunc("/reach", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>reach</title><img src="http://%[1]s/img.png">
<script>
fetch("http://%[1]s/fetch").catch(() => {});
try {
  const pc = new RTCPeerConnection({iceServers: [{urls: "stun:%[1]s"}, {urls: "turn:%[1]s?transport=tcp", username: "u", credential: "p"}]});
  pc.createDataChannel("x");
  pc.createOffer().then(o => pc.setLocalDescription(o));
} catch (e) {}
</script>`, canary)
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// With RemoteURL, a job's page reaches nothing the guard refuses: not by fetch, not by
// an image, not by WebRTC, whose traffic no proxy setting of a context covers.
func TestRemoteBrowserEgress(t *testing.T) {
	c := startLoopbackCanary(t)
	site := canarySite(t, c.port)
	guard := egress.New(egress.Config{Policy: egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")})})
	eg := func() (EgressSession, error) { return guard.NewSession() }

	t.Run("launched without the WebRTC restriction", func(t *testing.T) {
		remote := startRemoteChromium(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := New(ctx, Config{RemoteURL: remote, ChromeBin: "/nonexistent", Tabs: 1, Egress: eg, Logger: testLogger()})
		if err == nil {
			t.Cleanup(func() { _ = b.Close() })
			_, err = capture(t, b, Request{URL: site + "/reach", Name: "reach", Wait: Wait{Delay: time.Second}})
		}
		if err == nil {
			t.Error("a job ran on a remote browser whose WebRTC bypasses the guard")
		} else {
			t.Logf("refused: %v", err)
		}
		if n := c.conns.Load(); n != 0 {
			t.Errorf("the canary on 127.0.0.1 saw %d connections", n)
		}
	})
	t.Run("launched with it", func(t *testing.T) {
		c.conns.Store(0)
		remote := startRemoteChromium(t, "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
			"--webrtc-ip-handling-policy=disable_non_proxied_udp")
		b := newBrowser(t, Config{RemoteURL: remote, ChromeBin: "/nonexistent", Tabs: 1, Egress: eg})
		res := mustCapture(t, b, Request{URL: site + "/reach", Name: "reach", Wait: Wait{Delay: time.Second}})
		if res.BlockedRequests < 2 {
			t.Errorf("BlockedRequests = %d, want at least the image and the fetch", res.BlockedRequests)
		}
		if n := c.conns.Load(); n != 0 {
			t.Errorf("the canary on 127.0.0.1 saw %d connections", n)
		}
	})
}
