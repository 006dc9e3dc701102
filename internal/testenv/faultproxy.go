package testenv

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is what a FaultProxy does to the requests it gets.
type Fault int32

const (
	// FaultNone passes requests through.
	FaultNone Fault = iota
	// Fault500 answers 500 InternalError, as S3 does, without forwarding.
	Fault500
	// FaultReset resets the connection (RST) without an answer or forwarding.
	FaultReset
	// FaultDelay forwards the request, then holds the answer for the proxy's
	// delay before passing it on: the write happened, the client waits.
	FaultDelay
)

func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "pass"
	case Fault500:
		return "500"
	case FaultReset:
		return "reset"
	case FaultDelay:
		return "delay"
	}
	return "unknown"
}

// FaultProxy is a reverse proxy on loopback in front of an HTTP service (an
// S3 endpoint) that injects the fault it is set to. It keeps the Host header
// the client sent, so S3 signatures made for the proxy's address verify.
type FaultProxy struct {
	// Addr is the proxy's host:port, to use as the S3 endpoint.
	Addr string

	srv   *httptest.Server
	fault atomic.Int32
	delay atomic.Int64

	mu     sync.Mutex
	counts map[faultKey]int
	only   string // when set, the fault meets only paths that contain it
}

type faultKey struct {
	fault Fault
	op    string // the method, with " object" for a request about an object
}

// NewFaultProxy starts a proxy to target (host:port, plain http) that passes
// requests through until SetFault says otherwise. Close stops it.
func NewFaultProxy(target string) *FaultProxy {
	p := &FaultProxy{counts: map[faultKey]int{}}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	rp.ModifyResponse = func(resp *http.Response) error {
		if Fault(p.fault.Load()) != FaultDelay {
			return nil
		}
		select {
		case <-time.After(time.Duration(p.delay.Load())):
		case <-resp.Request.Context().Done():
			return resp.Request.Context().Err()
		}
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := Fault(p.fault.Load())
		p.mu.Lock()
		if p.only != "" && !strings.Contains(r.URL.Path, p.only) {
			f = FaultNone
		}
		p.mu.Unlock()
		op := r.Method
		if strings.Contains(strings.Trim(r.URL.Path, "/"), "/") {
			op += " object" // /bucket/key, not /bucket
		}
		p.count(f, op)
		switch f {
		case Fault500:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>` +
				`<Message>We encountered an internal error, please try again. (injected)</Message></Error>`))
		case FaultReset:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close sends RST, not FIN
			}
			conn.Close()
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	p.Addr = p.srv.Listener.Addr().String()
	return p
}

// SetFault switches the fault for every request; delay is FaultDelay's hold time.
func (p *FaultProxy) SetFault(f Fault, delay time.Duration) { p.SetFaultOn(f, delay, "") }

// SetFaultOn switches the fault for requests whose path contains only (every
// request when only is ""); the others pass through.
func (p *FaultProxy) SetFaultOn(f Fault, delay time.Duration, only string) {
	p.mu.Lock()
	p.only = only
	p.mu.Unlock()
	p.delay.Store(int64(delay))
	p.fault.Store(int32(f))
}

// Count returns how many requests of op met fault f: op is a method for
// requests about the bucket ("PUT" creates it), a method and " object" for
// requests about an object ("PUT object" uploads one), or "" for all.
func (p *FaultProxy) Count(f Fault, op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.counts {
		if k.fault == f && (op == "" || k.op == op) {
			n += v
		}
	}
	return n
}

// Counts returns a copy of the request counts by "<fault> <op>".
func (p *FaultProxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k.fault.String()+" "+k.op] = v
	}
	return out
}

func (p *FaultProxy) count(f Fault, op string) {
	p.mu.Lock()
	p.counts[faultKey{f, op}]++
	p.mu.Unlock()
}

// Close stops the proxy and closes its connections.
func (p *FaultProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}
