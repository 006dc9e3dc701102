package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// CaptureRequest is the body of POST /v1/capture: one Target and how long
// to wait for it (WaitMS, 0: the server's default 30,000; at most 120,000).
type CaptureRequest struct {
	Target
	WaitMS int `json:"wait_ms,omitempty"`
	// RawOptions, when set, is sent as "options" instead of Target.Options:
	// for callers that build options as JSON (the CLI's --options and --set).
	RawOptions json.RawMessage `json:"-"`
}

// body is the request's JSON body.
func (req CaptureRequest) body() any {
	if req.RawOptions == nil {
		return req
	}
	type plain CaptureRequest
	return struct {
		plain
		Options json.RawMessage `json:"options"`
	}{plain(req), req.RawOptions}
}

// Capture is the answer of POST /v1/capture: the job, and whether it was
// done within the wait (Done false: the answer was 202; poll GetJob).
type Capture struct {
	Job  Job
	Done bool
	// ResponseCode is the target page's HTTP status (X-Response-Code), 0 when none.
	ResponseCode int
}

// Capture captures one page and waits for it (POST /v1/capture), on the
// server's interactive lane.
func (c *Client) Capture(ctx context.Context, req CaptureRequest) (*Capture, error) {
	resp, err := c.send(ctx, request{method: http.MethodPost, path: "/v1/capture", body: req.body()})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return nil, readError(resp)
	}
	out := Capture{Done: resp.StatusCode == http.StatusOK}
	out.ResponseCode, _ = strconv.Atoi(resp.Header.Get("X-Response-Code"))
	if err := json.NewDecoder(resp.Body).Decode(&out.Job); err != nil {
		return nil, fmt.Errorf("POST /v1/capture: decode answer: %w", err)
	}
	return &out, nil
}

// CaptureOutput is one output's bytes of a synchronous capture. Close Body.
type CaptureOutput struct {
	Body        io.ReadCloser
	ContentType string
	JobID       string
	// ResponseCode is the target page's HTTP status (X-Response-Code), 0 when none.
	ResponseCode int
}

// ErrCaptureNotDone is returned by CaptureAs when the capture was not done
// within the wait (the server answered 202); the job goes on: poll GetJob.
type ErrCaptureNotDone struct{ JobID string }

func (e *ErrCaptureNotDone) Error() string {
	return "the capture was not done within the wait; its job " + e.JobID + " goes on"
}

// CaptureAs captures one page and answers the bytes of one output, chosen by
// content type (POST /v1/capture with Accept): image/png, image/jpeg,
// image/webp (segment, 0 meaning the first), text/markdown, text/html or
// application/pdf. A failed capture is an *Error with the job's failure code.
func (c *Client) CaptureAs(ctx context.Context, req CaptureRequest, contentType string, segment int) (*CaptureOutput, error) {
	r := request{method: http.MethodPost, path: "/v1/capture", body: req.body(), header: http.Header{"Accept": {contentType}}}
	if segment > 0 {
		r.query = url.Values{"segment": {strconv.Itoa(segment)}}
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusAccepted:
		resp.Body.Close()
		return nil, &ErrCaptureNotDone{JobID: resp.Header.Get("X-Snapq-Job-Id")}
	default:
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	out := &CaptureOutput{Body: resp.Body, ContentType: resp.Header.Get("Content-Type"), JobID: resp.Header.Get("X-Snapq-Job-Id")}
	out.ResponseCode, _ = strconv.Atoi(resp.Header.Get("X-Response-Code"))
	return out, nil
}
