package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Close must end every kind of live connection (idle keep-alive, half-sent head, CONNECT
// tunnel, WebSocket, request waiting on a silent target), and nothing may leak. Not
// parallel: it counts the process's goroutines.
func TestSessionCloseEndsEverythingNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	e := setup(t)

	// A target that accepts and never answers; it reports when the proxy hangs up.
	silent, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	upstreamClosed := make(chan struct{}, 8)
	accepted := make(chan struct{}, 8)
	var silentWG sync.WaitGroup
	silentWG.Add(1)
	go func() {
		defer silentWG.Done()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			silentWG.Add(1)
			go func() {
				defer silentWG.Done()
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
				upstreamClosed <- struct{}{}
			}()
		}
	}()

	var clients []net.Conn
	// 1. kept-alive connection after a completed request
	c1, br1 := e.rawConn(t)
	fmt.Fprintf(c1, "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", e.port)
	if resp, err := http.ReadResponse(br1, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("keep-alive request: %v", err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	clients = append(clients, c1)
	// 2. half-sent request head
	c2, _ := e.rawConn(t)
	io.WriteString(c2, "GET http://allowed.test/ HTTP/1.1\r\n")
	clients = append(clients, c2)
	// 3. CONNECT tunnel, idle
	resp, c3, _ := e.connect(t, "allowed.test:"+e.port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	clients = append(clients, c3)
	// 4. WebSocket, idle
	c4, br4 := e.rawConn(t)
	fmt.Fprintf(c4, "GET http://allowed.test:%s/ws HTTP/1.1\r\nHost: allowed.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: x\r\n\r\n", e.port)
	if resp, err := http.ReadResponse(br4, &http.Request{Method: "GET"}); err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	clients = append(clients, c4)
	// 5. request waiting on the silent target
	c5, _ := e.rawConn(t)
	fmt.Fprintf(c5, "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", portOf(silent.Addr()))
	clients = append(clients, c5)
	select {
	case <-time.After(2 * time.Second):
		t.Fatal("silent target never got the request")
	case <-accepted:
	}

	start := time.Now()
	if err := e.sess.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s", d)
	}
	if err := e.sess.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for i, c := range clients {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("client connection %d still open after Close", i+1)
		}
		_ = c.Close()
	}
	select {
	case <-upstreamClosed:
	case <-time.After(2 * time.Second):
		t.Error("connection to the silent target still open after Close")
	}
	if c, err := net.DialTimeout("tcp", e.sess.URL()[len("http://"):], time.Second); err == nil {
		_ = c.Close()
		t.Error("listener still accepting after Close")
	}

	_ = silent.Close()
	silentWG.Wait()
	e.closeAll()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	const slack = 3
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before+slack {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
