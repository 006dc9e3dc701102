package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

// The capture tools' one path: POST /v1/capture (a one-job batch on the
// interactive lane), then the job's artifacts.

// maxDownload caps the bytes read of one artifact (Markdown, an image).
const maxDownload = 16 << 20

// capture captures url with opts and waits for it; a job that failed, or is
// not done within the wait, is a tool error naming it.
func (d *deps) capture(ctx context.Context, c *client.Client, url string, opts *client.Options) (*client.Job, error) {
	cp, err := c.Capture(ctx, client.CaptureRequest{Target: client.Target{URL: url, Options: opts}, WaitMS: d.waitMS})
	if err != nil {
		return nil, err
	}
	j := &cp.Job
	switch {
	case !cp.Done || !j.Terminal():
		return nil, pending(j)
	case j.Status != client.JobSucceeded:
		return nil, jobFailed(j)
	}
	return j, nil
}

// artifactsOf returns j's artifacts of kind, in name order (segments -001, -002, …).
func artifactsOf(j *client.Job, kind string) []client.Artifact {
	var out []client.Artifact
	for _, a := range j.Artifacts {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// download reads an artifact's bytes, at most limit of them.
func download(ctx context.Context, c *client.Client, a client.Artifact, limit int64) ([]byte, error) {
	if a.Bytes > limit {
		return nil, &toolError{Code: "too_large", Message: fmt.Sprintf("%s is %d bytes, over the %d this tool returns", a.Name, a.Bytes, limit)}
	}
	body, err := c.OpenArtifact(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return readCapped(body, a.Name, limit)
}

// readCapped reads r, the file name, refusing more than limit bytes.
func readCapped(r io.Reader, name string, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read artifact %s: %w", name, err)
	}
	if n > limit {
		return nil, &toolError{Code: "too_large", Message: fmt.Sprintf("%s is over the %d bytes this tool returns", name, limit)}
	}
	return buf.Bytes(), nil
}

// pageFacts are the page's facts every capture tool reports.
type pageFacts struct {
	URL        string `json:"url"`
	FinalURL   string `json:"final_url"`
	Title      string `json:"title"`
	HTTPStatus int    `json:"http_status"`
	JobID      string `json:"job_id"`
}

func factsOf(j *client.Job) pageFacts {
	f := pageFacts{URL: j.URL, JobID: j.ID}
	if r := j.Result; r != nil {
		f.FinalURL, f.Title, f.HTTPStatus = r.FinalURL, r.Title, r.HTTPStatus
	}
	return f
}

// header is the facts as the first lines of a reply; a status that is not
// 2xx/3xx is pointed out (the page is still the result).
func (f pageFacts) header() string {
	s := fmt.Sprintf("Title: %s\nURL: %s\nHTTP status: %d\n", f.Title, f.FinalURL, f.HTTPStatus)
	if f.HTTPStatus >= 400 {
		s += fmt.Sprintf("Note: the page answered HTTP %d; what follows is that error page.\n", f.HTTPStatus)
	}
	return s
}

// link is an artifact as a resource link: its api URL (GET it with the API
// key: a redirect to the bytes).
func link(a client.Artifact) *sdk.ResourceLink {
	size := a.Bytes
	return &sdk.ResourceLink{URI: a.URL, Name: a.Name, MIMEType: a.ContentType, Size: &size,
		Description: "snapq artifact; GET it with the API key as Authorization: Bearer (a redirect to the file)"}
}

// structured is v as the structured content of a result.
func structured(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return json.RawMessage(raw)
}

// schema is a tool's JSON Schema, written out.
func schema(s string) json.RawMessage { return json.RawMessage(s) }
