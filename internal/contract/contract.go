package contract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Validator checks requests and responses against one OpenAPI document.
type Validator struct {
	Doc    *openapi3.T
	router routers.Router
}

// Load parses and validates an OpenAPI document. Its servers are dropped so
// the routes match whatever address the api listens on.
func Load(doc []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if err := t.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("invalid openapi document: %w", err)
	}
	t.Servers = nil
	r, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("route openapi document: %w", err)
	}
	return &Validator{Doc: t, router: r}, nil
}

// Violation is one request or response that the document does not allow.
type Violation struct {
	Method  string
	Path    string
	Status  int
	Message string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s -> %d: %s", v.Method, v.Path, v.Status, v.Message)
}

// Exchange is one request and its answer, bodies read.
type Exchange struct {
	Request     *http.Request
	RequestBody []byte
	Status      int
	Header      http.Header
	// Body is nil when it was not read (an event stream): then only the
	// status and headers are checked.
	Body []byte
}

// Check returns what the document does not allow of x, or nil:
//
//   - a CORS preflight is not checked;
//   - a path and method the document lacks, answered with anything but 404
//     or 405 (the server has an undocumented route);
//   - a request the document rejects that the server accepted (status below
//     400): the server takes what its description says it refuses. A
//     request the server refused is not checked: tests send bad requests on
//     purpose, and the document cannot state every rule the server enforces;
//   - a status the operation does not document, or a response whose headers
//     or body do not match the documented ones.
func (v *Validator) Check(ctx context.Context, x Exchange) *Violation {
	req := x.Request
	fail := func(format string, args ...any) *Violation {
		return &Violation{Method: req.Method, Path: req.URL.Path, Status: x.Status, Message: fmt.Sprintf(format, args...)}
	}
	if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
		return nil // a CORS preflight, answered on any path by the CORS middleware: no operation
	}
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		if x.Status == http.StatusNotFound || x.Status == http.StatusMethodNotAllowed {
			return nil
		}
		return fail("the document has no such operation (%v), but the server answered", err)
	}
	// Security is the server's business (auth can be off); the document's
	// schemes are checked by its own validation.
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: cloneWithBody(req, x.RequestBody), PathParams: params, Route: route, Options: opts}
	if x.Status < 400 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fail("the server accepted a request the document rejects: %v", err)
		}
	}
	ropts := *opts
	body := x.Body
	if body == nil {
		ropts.ExcludeResponseBody = true
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.Status, Header: x.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &ropts}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fail("the response does not match the document: %v", oneLine(err))
	}
	return nil
}

func cloneWithBody(req *http.Request, body []byte) *http.Request {
	c := req.Clone(req.Context())
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.ContentLength = int64(len(body))
	return c
}

// oneLine shortens kin-openapi's multi-line schema errors (which quote the
// whole schema) to their reason and the value's location.
func oneLine(err error) string {
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		// The JSON Schema 2020-12 validator's reason is a tree, one problem a line.
		reason := strings.Join(strings.Fields(strings.ReplaceAll(se.Reason, "\n", " ")), " ")
		return fmt.Sprintf("%s (at %s)", reason, "/"+strings.Join(se.JSONPointer(), "/"))
	}
	var re *openapi3filter.ResponseError
	if errors.As(err, &re) && re.Err != nil && re.Reason != "" {
		return re.Reason + ": " + strings.SplitN(re.Err.Error(), "\n", 2)[0]
	}
	return strings.SplitN(err.Error(), "\n", 2)[0]
}

// Transport is an http.RoundTripper that checks every exchange with the api
// at Host against the document and records the violations. Requests to other
// hosts (the presigned artifact downloads a redirect leads to) pass unchecked.
type Transport struct {
	Base      http.RoundTripper // nil: http.DefaultTransport
	Validator *Validator
	// Host is the api's host:port; "" checks every request.
	Host string
	// Undocumented are paths the document leaves out on purpose (the
	// dashboard, the queue UI): they pass unchecked. One ending in "*" is a
	// prefix ("/assets/*").
	Undocumented []string

	mu         sync.Mutex
	violations []Violation
	// seen holds the exchanges checked already: a test that polls gets the
	// same answer many times, and checking one costs milliseconds (the JSON
	// Schema 2020-12 validator compiles the schema each time).
	seen map[[sha256.Size]byte]bool
}

// RoundTrip sends req through Base and checks the exchange. Bodies are read
// whole and handed on; an event stream's body is not read (it may never
// end): its status and headers are checked.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if !t.checks(req) {
		return base.RoundTrip(req)
	}
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	x := Exchange{Request: req, RequestBody: reqBody, Status: resp.StatusCode, Header: resp.Header}
	if !isEventStream(resp.Header) {
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if err != nil {
			// The caller sees the short body; the check would only repeat the read error.
			return resp, nil
		}
		x.Body = b
	}
	if t.firstTime(x) {
		if v := t.Validator.Check(req.Context(), x); v != nil {
			t.mu.Lock()
			t.violations = append(t.violations, *v)
			t.mu.Unlock()
		}
	}
	return resp, nil
}

// maxSeen bounds the memory of firstTime; past it every exchange is checked.
const maxSeen = 100_000

// firstTime reports whether no exchange like x (the same request and the
// same answer) was checked before.
func (t *Transport) firstTime(x Exchange) bool {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(x.Request.Method), []byte(x.Request.URL.RequestURI()), x.RequestBody,
		[]byte(strconv.Itoa(x.Status)), x.Body} {
		h.Write(part)
		h.Write([]byte{0})
	}
	hdr := x.Header.Clone()
	hdr.Del("Date")
	_ = hdr.Write(h) // in key order; writing to a hash never fails
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[sum] {
		return false
	}
	if t.seen == nil {
		t.seen = map[[sha256.Size]byte]bool{}
	}
	if len(t.seen) < maxSeen {
		t.seen[sum] = true
	}
	return true
}

func (t *Transport) checks(req *http.Request) bool {
	if t.Host != "" && req.URL.Host != t.Host {
		return false
	}
	for _, p := range t.Undocumented {
		prefix, isPrefix := strings.CutSuffix(p, "*")
		if req.URL.Path == p || (isPrefix && strings.HasPrefix(req.URL.Path, prefix)) {
			return false
		}
	}
	return true
}

// Violations returns what was recorded so far.
func (t *Transport) Violations() []Violation {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Violation(nil), t.violations...)
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}
