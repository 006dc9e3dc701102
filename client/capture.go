package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// CaptureRequest is the body of POST /v1/capture: one Target and how long
// to wait for it (WaitMS, 0: the server's default 30,000; at most 120,000).
type CaptureRequest struct {
	Target
	WaitMS int `json:"wait_ms,omitempty"`
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
	resp, err := c.send(ctx, request{method: http.MethodPost, path: "/v1/capture", body: req})
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
