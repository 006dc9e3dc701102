package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// serve is the session's http.Handler: CONNECT tunnels and absolute-form http:// requests,
// nothing else.
func (s *Session) serve(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		http.Error(w, "snapq egress: session closed", http.StatusServiceUnavailable)
		return
	}
	defer s.handlers.Done()
	switch {
	case r.Method == http.MethodConnect:
		s.serveConnect(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && r.URL.Host != "":
		s.serveHTTP(w, r)
	default:
		badRequest(w, "only CONNECT host:port and absolute-form http:// requests are proxied")
	}
}

// serveConnect checks and dials host:port, then splices bytes both ways. TLS stays end to
// end; the policy sees only the host, port and address.
func (s *Session) serveConnect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.URL.Host)
	if err != nil || host == "" {
		badRequest(w, "CONNECT needs host:port")
		return
	}
	if _, err := parsePort(port); err != nil {
		badRequest(w, err.Error())
		return
	}
	up, ev, err := s.p.dial(r.Context(), host, port)
	s.record(ev)
	if err != nil {
		refuse(w, ev.Kind)
		return
	}
	if !s.track(up) {
		return
	}
	defer s.release(up)

	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.log.Error("egress: hijack CONNECT", "err", err)
		http.Error(w, "snapq egress: cannot tunnel", http.StatusInternalServerError)
		return
	}
	defer s.release(client) // tracked since StateNew; hijacked connections stay tracked
	_ = client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	tunnel(client, brw.Reader, up, up)
}

// serveHTTP forwards one plain HTTP request to the pinned address and streams the
// response back. Redirects are returned to the browser, never followed, so the next hop
// comes back through the proxy and is checked again. A 101 Switching Protocols response
// (WebSocket over ws://) turns the exchange into a tunnel.
func (s *Session) serveHTTP(w http.ResponseWriter, r *http.Request) {
	host, port, ok := plainTarget(w, r)
	if !ok {
		return
	}
	up, ev, err := s.p.dial(r.Context(), host, port)
	if err != nil {
		s.record(ev)
		refuse(w, ev.Kind)
		return
	}
	if !s.track(up) {
		return
	}
	defer s.release(up)
	// The browser giving up (navigation timeout, tab closed) or Close cancels the request
	// context; that must also end a target that never answers.
	stop := context.AfterFunc(r.Context(), func() { _ = up.Close() })
	defer stop()

	upType := upgradeType(r.Header)
	br := bufio.NewReader(up)
	resp, err := s.roundTrip(up, br, outgoingRequest(r, upType), upType)
	if err != nil {
		ev.Kind, ev.Reason = responseFailure(err), err.Error()
		s.record(ev)
		refuse(w, ev.Kind)
		return
	}
	s.record(ev)
	defer resp.Body.Close()

	removeHopHeaders(resp.Header)
	resp.Header.Del(HeaderOutcome) // a target must not be able to forge an outcome

	if resp.StatusCode == http.StatusSwitchingProtocols {
		s.upgrade(w, resp, upType, up, br)
		return
	}
	copyResponse(w, resp)
}

// plainTarget is the host and port of a plain HTTP request (port 80 when none); it answers
// 400 itself and returns false when the request names no valid target.
func plainTarget(w http.ResponseWriter, r *http.Request) (host, port string, ok bool) {
	host, port = r.URL.Hostname(), r.URL.Port()
	if port == "" {
		port = "80"
	}
	if host == "" {
		badRequest(w, "request URL has no host")
		return "", "", false
	}
	if _, err := parsePort(port); err != nil {
		badRequest(w, err.Error())
		return "", "", false
	}
	return host, port, true
}

// roundTrip writes out to the target and reads the response head, bounded by the header
// timeout. A 101 answer to anything but the requested upgrade is an error.
func (s *Session) roundTrip(up net.Conn, br *bufio.Reader, out *http.Request, upType string) (*http.Response, error) {
	if err := out.Write(up); err != nil {
		return nil, fmt.Errorf("write request: %w", err)
	}
	_ = up.SetReadDeadline(time.Now().Add(s.p.cfg.HeaderTimeout))
	resp, err := readResponse(br, out)
	if err != nil {
		return nil, fmt.Errorf("read response head: %w", err)
	}
	_ = up.SetReadDeadline(time.Time{})
	if resp.StatusCode == http.StatusSwitchingProtocols &&
		(upType == "" || !strings.EqualFold(resp.Header.Get("Upgrade"), upType)) {
		resp.Body.Close()
		return nil, fmt.Errorf("target switched protocols to %q, requested %q", resp.Header.Get("Upgrade"), upType)
	}
	return resp, nil
}

// upgrade hands the browser the target's 101 answer and turns the exchange into a tunnel.
func (s *Session) upgrade(w http.ResponseWriter, resp *http.Response, upType string, up net.Conn, br *bufio.Reader) {
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.log.Error("egress: hijack upgrade", "err", err)
		http.Error(w, "snapq egress: cannot upgrade", http.StatusInternalServerError)
		return
	}
	defer s.release(client)
	_ = client.SetDeadline(time.Time{})
	resp.Header.Set("Connection", "Upgrade")
	resp.Header.Set("Upgrade", upType)
	_, _ = fmt.Fprintf(brw, "HTTP/1.1 %s\r\n", resp.Status)
	_ = resp.Header.Write(brw)
	_, _ = io.WriteString(brw, "\r\n")
	if err := brw.Flush(); err != nil {
		return
	}
	tunnel(client, brw.Reader, up, br)
}

// copyResponse streams the target's response to the browser, flushing as bytes arrive.
func copyResponse(w http.ResponseWriter, resp *http.Response) {
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if rerr == io.EOF {
			return
		}
		if rerr != nil {
			// The target died mid-body. Returning normally would let the server finish a
			// chunked response and make the truncated body look complete; ErrAbortHandler
			// is net/http's sanctioned way to drop the connection instead.
			panic(http.ErrAbortHandler)
		}
	}
}

// responseFailure is the kind of a failure after the connection to the target was made:
// a reset, or anything else (a close, a timeout, a malformed head) that left no response.
func responseFailure(err error) string {
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return KindConnectionReset
	}
	return KindNoResponse
}

// outgoingRequest builds the origin-form request sent to the target: same method, path,
// query, Host and end-to-end headers; hop-by-hop headers removed; one request per
// connection (Connection: close) unless upgrading.
func outgoingRequest(r *http.Request, upType string) *http.Request {
	h := r.Header.Clone()
	removeHopHeaders(h)
	h.Del("Expect") // net/http already answered 100-continue to the browser
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // present but empty: net/http adds no Go User-Agent
	}
	out := &http.Request{
		Method: r.Method,
		URL: &url.URL{
			Path:       r.URL.Path,
			RawPath:    r.URL.RawPath,
			RawQuery:   r.URL.RawQuery,
			ForceQuery: r.URL.ForceQuery,
		},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Host:          r.Host, // for absolute-form, net/http sets Host from the request URL (RFC 9112 §3.2.2)
		Body:          r.Body,
		ContentLength: r.ContentLength,
		Close:         true,
	}
	if r.ContentLength == 0 {
		out.Body = nil
	}
	if upType != "" {
		out.Close = false
		h.Set("Connection", "Upgrade")
		h.Set("Upgrade", upType)
	}
	return out
}

// readResponse reads the final response head, skipping informational 1xx responses other
// than 101.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			resp.Body.Close()
			continue
		}
		return resp, nil
	}
}

// hopHeaders are meaningful for one connection only (RFC 9110 §7.6.1), plus the
// non-standard Proxy-Connection Chromium sends to proxies.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopHeaders deletes hop-by-hop headers and those named in Connection.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// upgradeType returns the requested protocol when Connection contains "upgrade".
func upgradeType(h http.Header) string {
	for _, v := range h.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(textproto.TrimString(tok), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}

// tunnel copies bytes both ways until either side closes or fails, then closes both.
// a and b are the connections; ar and br read from them (possibly through buffers
// holding bytes already read).
func tunnel(a net.Conn, ar io.Reader, b net.Conn, br io.Reader) {
	done := make(chan struct{}, 2)
	cp := func(dst net.Conn, src io.Reader) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(b, ar)
	go cp(a, br)
	<-done
	_ = a.Close()
	_ = b.Close()
	<-done
}

// refuse writes the proxy's own answer for a failed outcome: 403 for blocked, 502
// otherwise, with X-Snapq-Egress naming the kind. The body is deliberately generic: it
// may end up in a screenshot, and the reason ("resolves to 10.1.2.3") would leak
// internal DNS data. Reasons go to Session events and logs instead.
func refuse(w http.ResponseWriter, kind string) {
	status := http.StatusBadGateway
	if kind == KindBlocked {
		status = http.StatusForbidden
	}
	writeOwn(w, status, kind)
}

// badRequest answers requests the proxy does not handle.
func badRequest(w http.ResponseWriter, msg string) {
	writeOwn(w, http.StatusBadRequest, "bad_request: "+msg)
}

func writeOwn(w http.ResponseWriter, status int, text string) {
	kind, _, _ := strings.Cut(text, ":")
	h := w.Header()
	h.Set(HeaderOutcome, kind)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "snapq egress: "+text+"\n")
}
