package mcp

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

// On the api, a tool call's client sends its requests to the api's own router
// in this process: no socket, but every middleware (authentication, rate
// limit, host check) and handler runs as for a request from outside, with the
// key, Host and peer address of the /mcp request that carried the call.

// Private headers set by Handler.Serve on each /mcp request (any value the
// peer sent is replaced): the request's origin and peer address.
const (
	originHeader = "X-Snapq-Mcp-Origin"
	peerHeader   = "X-Snapq-Mcp-Peer"
)

// maxInProcessBody caps an answer of the router read in process (job views,
// batch pages, error bodies; artifact bytes come from the object store).
const maxInProcessBody = 32 << 20

// inProcess is the Caller of the /mcp door.
type inProcess struct {
	api    http.Handler
	remote http.RoundTripper // the object store's presigned URLs
}

func (p *inProcess) caller(_ context.Context, req *sdk.CallToolRequest) (*client.Client, error) {
	var h http.Header
	if req.Extra != nil {
		h = req.Extra.Header
	}
	origin := h.Get(originHeader)
	if origin == "" {
		return nil, fmt.Errorf("mcp: the call came without its request's origin")
	}
	key := ""
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		key = strings.TrimSpace(a[7:])
	}
	tr := &routerTransport{api: p.api, remote: p.remote, origin: origin, peer: h.Get(peerHeader)}
	return client.New(client.Config{BaseURL: origin, APIKey: key, HTTPClient: &http.Client{Transport: tr},
		UserAgent: "snapq-mcp", MaxRetries: -1})
}

// routerTransport serves requests to origin with the api's router, others
// (presigned object URLs) over the network.
type routerTransport struct {
	api          http.Handler
	remote       http.RoundTripper
	origin, peer string
}

func (t *routerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme+"://"+r.URL.Host != t.origin {
		return t.remote.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.RemoteAddr, r.RequestURI = t.peer, r.URL.RequestURI()
	if r.URL.Scheme == "https" {
		r.TLS = &tls.ConnectionState{}
	}
	w := &recorder{header: http.Header{}}
	t.api.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.over {
		return nil, fmt.Errorf("%s %s: answer over %d bytes", r.Method, r.URL.Path, maxInProcessBody)
	}
	return &http.Response{StatusCode: w.status, Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.header, Request: r,
		Body: io.NopCloser(bytes.NewReader(w.body.Bytes())), ContentLength: int64(w.body.Len())}, nil
}

// recorder is the http.ResponseWriter of an in-process request: it keeps the
// status, headers and at most maxInProcessBody bytes.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	over   bool
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.body.Len()+len(p) > maxInProcessBody {
		w.over = true
		return 0, fmt.Errorf("answer over %d bytes", maxInProcessBody)
	}
	return w.body.Write(p)
}

// Flush lets handlers that flush (event streams) run; the answer is read
// when the handler returns.
func (w *recorder) Flush() {}
