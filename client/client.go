package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultMaxRetries   = 5
	DefaultMaxRetryWait = 60 * time.Second
	DefaultPollInterval = time.Second
)

// Config configures a Client. The zero value of every field but BaseURL is
// usable.
type Config struct {
	// BaseURL is the api's address, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// APIKey is sent as Authorization: Bearer <key>; empty sends none (an api
	// with SNAPQ_AUTH=off).
	APIKey string
	// HTTPClient sends the requests (default: a client without a timeout,
	// since event streams are long; bound calls with their context).
	HTTPClient *http.Client
	// UserAgent is sent with every request (default "snapq-go-client").
	UserAgent string
	// MaxRetries is how many 429 answers one call waits out before it
	// returns the 429 as an *Error (default DefaultMaxRetries; negative: none).
	MaxRetries int
	// MaxRetryWait caps one wait for a 429's Retry-After (default
	// DefaultMaxRetryWait). A longer Retry-After returns the 429 at once.
	MaxRetryWait time.Duration
	// PollInterval is how often WaitBatch and WaitRun poll when the server
	// has no event stream (default DefaultPollInterval).
	PollInterval time.Duration
}

// Client calls the snapq API. It is safe for concurrent use.
type Client struct {
	base *url.URL
	cfg  Config
	hc   *http.Client
	idle time.Duration // streamIdle; shorter in tests
}

// New returns a client of the api at cfg.BaseURL.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", cfg.BaseURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "snapq-go-client"
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = DefaultMaxRetryWait
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	return &Client{base: u, cfg: cfg, hc: cfg.HTTPClient, idle: streamIdle}, nil
}

// BaseURL is the api's address the client calls.
func (c *Client) BaseURL() string { return c.base.String() }

// request is one API call.
type request struct {
	method string
	path   string // below the base URL, e.g. "/v1/batches"
	query  url.Values
	body   any // JSON-encoded when not nil
	header http.Header
	want   int // the success status (default 200)
}

// do sends req, waits out 429s, and decodes a successful JSON answer into
// out (when not nil). An error answer is an *Error.
func (c *Client) do(ctx context.Context, req request, out any) error {
	resp, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	want := req.want
	if want == 0 {
		want = http.StatusOK
	}
	if resp.StatusCode != want {
		return readError(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", req.method, req.path, err)
	}
	return nil
}

// send sends req and returns the first answer that is not a 429 it may wait
// out. The caller closes the body.
func (c *Client) send(ctx context.Context, req request) (*http.Response, error) {
	return c.sendWith(ctx, c.hc, req)
}

func (c *Client) sendWith(ctx context.Context, hc *http.Client, req request) (*http.Response, error) {
	var body []byte
	if req.body != nil {
		var err error
		if raw, ok := req.body.(json.RawMessage); ok {
			body = raw
		} else if body, err = json.Marshal(req.body); err != nil {
			return nil, fmt.Errorf("%s %s: encode body: %w", req.method, req.path, err)
		}
	}
	for attempt := 0; ; attempt++ {
		hr, err := c.newRequest(ctx, req, body)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(hr)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", req.method, req.path, err)
		}
		if resp.StatusCode != http.StatusTooManyRequests || attempt >= c.cfg.MaxRetries {
			return resp, nil
		}
		wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if !ok {
			wait = time.Second << min(attempt, 5)
		}
		if wait > c.cfg.MaxRetryWait {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%s %s: waiting out 429: %w", req.method, req.path, err)
		}
	}
}

func (c *Client) newRequest(ctx context.Context, req request, body []byte) (*http.Request, error) {
	u := *c.base
	// req.path is escaped (escape); keep it so, or a slash in a branch
	// name (%2F) would be sent as %252F.
	raw := strings.TrimRight(u.EscapedPath(), "/") + req.path
	p, err := url.PathUnescape(raw)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.method, req.path, err)
	}
	u.Path, u.RawPath = p, raw
	if len(req.query) > 0 {
		u.RawQuery = req.query.Encode()
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u.String(), r)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.method, req.path, err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.cfg.UserAgent)
	if c.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	for k, vs := range req.header {
		hr.Header[http.CanonicalHeaderKey(k)] = vs // replaces the defaults above (Accept)
	}
	return hr, nil
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// escape is a path segment from an id given by the caller.
func escape(id string) string { return url.PathEscape(id) }
