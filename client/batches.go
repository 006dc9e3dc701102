package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
)

// BatchRequest is the body of CreateBatch: Targets and/or URLs (up to the
// api's SNAPQ_MAX_TARGETS together), options shared by every target, labels
// and a webhook.
type BatchRequest struct {
	Targets []Target          `json:"targets,omitempty"`
	URLs    []string          `json:"urls,omitempty"`
	Options *Options          `json:"options,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Webhook *WebhookInput     `json:"webhook,omitempty"`
	// Sitemap, instead of Targets/URLs: the api reads this sitemap (index, gzip or
	// robots.txt) and makes one job per unique page, at most Limit (0: the server's
	// maximum), filtered by Include/Exclude patterns.
	Sitemap string   `json:"sitemap,omitempty"`
	Limit   int      `json:"limit,omitempty"`
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// Crawl, instead of Targets/URLs/Sitemap: a bounded crawl from a start page; its pages'
	// links add jobs to the same batch (docs/api/batches.md: Discovery).
	Crawl *Crawl `json:"crawl,omitempty"`
	// IdempotencyKey is sent as the Idempotency-Key header: the same key and
	// body create the batch once and replay its answer after.
	IdempotencyKey string `json:"-"`
	// RawOptions, when set, is sent as "options" instead of Options: for
	// callers that build options as JSON (the CLI's --options and --set).
	RawOptions json.RawMessage `json:"-"`
}

// Crawl is a bounded crawl: MaxDepth link hops from URL (nil: the server's default,
// 2; 0 is the start page only), at most MaxPages jobs (0: the server's default), links
// filtered by Include/Exclude patterns, of URL's origin only unless SameOrigin is false.
type Crawl struct {
	URL        string   `json:"url"`
	MaxDepth   *int     `json:"max_depth,omitempty"`
	MaxPages   int      `json:"max_pages,omitempty"`
	Include    []string `json:"include,omitempty"`
	Exclude    []string `json:"exclude,omitempty"`
	SameOrigin *bool    `json:"same_origin,omitempty"`
}

// Target is one page to capture; Name (optional) names its files, Options
// override the batch's field by field.
type Target struct {
	URL     string   `json:"url"`
	Name    string   `json:"name,omitempty"`
	Options *Options `json:"options,omitempty"`
}

// WebhookInput is where the api POSTs the batch's (or a suite's run's)
// completion, signed with Secret.
type WebhookInput struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// CreateBatch submits a batch (POST /v1/batches). A bad target rejects the
// whole batch with an *Error naming every bad field.
func (c *Client) CreateBatch(ctx context.Context, req BatchRequest) (*CreatedBatch, error) {
	var body any = req
	if req.RawOptions != nil {
		type plain BatchRequest
		body = struct {
			plain
			Options json.RawMessage `json:"options"`
		}{plain(req), req.RawOptions}
	}
	r := request{method: http.MethodPost, path: "/v1/batches", body: body, want: http.StatusAccepted}
	if req.IdempotencyKey != "" {
		r.header = http.Header{"Idempotency-Key": {req.IdempotencyKey}}
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return nil, readError(resp)
	}
	var out CreatedBatch
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("POST /v1/batches: decode answer: %w", err)
	}
	out.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	return &out, nil
}

// GetBatch returns a batch with its counts (GET /v1/batches/:id).
func (c *Client) GetBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/batches/" + escape(id)}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// CancelBatch cancels a batch's unfinished jobs (POST /v1/batches/:id/cancel).
func (c *Client) CancelBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/batches/" + escape(id) + "/cancel"}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ListBatchesPage returns one page of the caller's batches, newest first.
func (c *Client) ListBatchesPage(ctx context.Context, opts ListOptions) (*Page[Batch], error) {
	var out struct {
		Batches    []Batch `json:"batches"`
		NextCursor *string `json:"next_cursor"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/batches", query: opts.query()}, &out); err != nil {
		return nil, err
	}
	return &Page[Batch]{Items: out.Batches, NextCursor: deref(out.NextCursor)}, nil
}

// ListBatches iterates over the caller's batches, newest first, page by page.
func (c *Client) ListBatches(ctx context.Context, opts ListOptions) iter.Seq2[Batch, error] {
	return pages(ctx, opts, c.ListBatchesPage)
}

// ListJobsPage returns one page of a batch's jobs in submission order.
func (c *Client) ListJobsPage(ctx context.Context, batchID string, opts ListOptions) (*Page[Job], error) {
	var out struct {
		Jobs       []Job   `json:"jobs"`
		NextCursor *string `json:"next_cursor"`
	}
	path := "/v1/batches/" + escape(batchID) + "/jobs"
	if err := c.do(ctx, request{method: http.MethodGet, path: path, query: opts.query()}, &out); err != nil {
		return nil, err
	}
	return &Page[Job]{Items: out.Jobs, NextCursor: deref(out.NextCursor)}, nil
}

// ListJobs iterates over a batch's jobs in submission order. The jobs carry
// Preview, not Artifacts: GetJob lists a job's artifacts.
func (c *Client) ListJobs(ctx context.Context, batchID string, opts ListOptions) iter.Seq2[Job, error] {
	return pages(ctx, opts, func(ctx context.Context, o ListOptions) (*Page[Job], error) {
		return c.ListJobsPage(ctx, batchID, o)
	})
}

// BatchWebhooks returns a batch's webhook and its deliveries
// (GET /v1/batches/:id/webhooks).
func (c *Client) BatchWebhooks(ctx context.Context, batchID string) (*Webhooks, error) {
	var out Webhooks
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/batches/" + escape(batchID) + "/webhooks"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetJob returns a job with its result and artifacts (GET /v1/jobs/:id).
func (c *Client) GetJob(ctx context.Context, id string) (*Job, error) {
	var j Job
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/" + escape(id)}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// ArtifactBody is an artifact's content being read; close it.
type ArtifactBody struct {
	io.ReadCloser
	ContentType string
	// Size is the byte count the object store announced, -1 when unknown.
	Size int64
}

// OpenArtifact streams an artifact's bytes: GET /v1/artifacts/:id answers
// with a redirect to a time-limited object URL, which is fetched without the
// API key (it carries its own signature).
func (c *Client) OpenArtifact(ctx context.Context, id string) (*ArtifactBody, error) {
	return c.openRedirected(ctx, "/v1/artifacts/"+escape(id))
}

// openRedirected GETs path, which answers with the bytes or a redirect to a
// presigned object URL, fetched without the API key.
func (c *Client) openRedirected(ctx context.Context, path string) (*ArtifactBody, error) {
	noFollow := *c.hc
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.sendWith(ctx, &noFollow, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK { // served directly (a proxy in front of the store)
		return &ArtifactBody{ReadCloser: resp.Body, ContentType: resp.Header.Get("Content-Type"), Size: resp.ContentLength}, nil
	}
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return nil, fmt.Errorf("GET %s: redirect without a location: %w", path, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	hr.Header.Set("User-Agent", c.cfg.UserAgent)
	obj, err := c.hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("GET %s: object: %w", path, err)
	}
	if obj.StatusCode != http.StatusOK {
		defer obj.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(obj.Body, 512))
		return nil, &Error{StatusCode: obj.StatusCode, Code: "http_" + strconv.Itoa(obj.StatusCode),
			Message: "object store: " + string(msg)}
	}
	return &ArtifactBody{ReadCloser: obj.Body, ContentType: obj.Header.Get("Content-Type"), Size: obj.ContentLength}, nil
}

// DownloadArtifact copies an artifact's bytes to w and returns how many it
// wrote.
func (c *Client) DownloadArtifact(ctx context.Context, id string, w io.Writer) (int64, error) {
	body, err := c.OpenArtifact(ctx, id)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.Copy(w, body)
	if err != nil {
		return n, fmt.Errorf("download artifact %s: %w", id, err)
	}
	if body.Size >= 0 && n != body.Size {
		return n, fmt.Errorf("download artifact %s: got %d of %d bytes", id, n, body.Size)
	}
	return n, nil
}

// GetKey returns the calling API key, its limits and its jobs in flight
// (GET /v1/key).
func (c *Client) GetKey(ctx context.Context) (*KeyInfo, error) {
	var k KeyInfo
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/key"}, &k); err != nil {
		return nil, err
	}
	return &k, nil
}
