package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// BatchEvent is what WaitBatch reports as a batch progresses.
type BatchEvent struct {
	// ID is the stream's event id ("" when polling).
	ID string
	// Type is snapshot, job, batch or done from the stream; "poll" for a
	// state read by polling.
	Type string
	// Batch is the batch's latest state: its status and counts after this
	// event (every type has it).
	Batch Batch
	// Job is the job that changed state, for a job event.
	Job *JobEvent
}

// JobEvent is one job's state change.
type JobEvent struct {
	BatchID string    `json:"batch_id"`
	JobID   string    `json:"job_id"`
	Name    string    `json:"name"`
	URL     string    `json:"url"`
	Status  string    `json:"status"` // queued, running, retrying, succeeded, failed, canceled
	Attempt int       `json:"attempt"`
	Error   *JobError `json:"error,omitempty"`
	At      time.Time `json:"at"`
}

// WaitBatch waits until every job of the batch reached a final status and
// returns the batch then. It follows the live event stream, resuming it
// after a dropped connection without losing events, and polls GetBatch every
// Config.PollInterval when the server has no stream. onEvent (may be nil)
// sees every event, in order, on the calling goroutine.
func (c *Client) WaitBatch(ctx context.Context, id string, onEvent func(BatchEvent)) (*Batch, error) {
	emit := func(e BatchEvent) {
		if onEvent != nil {
			onEvent(e)
		}
	}
	var cur Batch
	var final *Batch
	handle := func(ev Event) (bool, error) {
		out := BatchEvent{ID: ev.ID, Type: ev.Type}
		switch ev.Type {
		case "snapshot", "done":
			if err := json.Unmarshal(ev.Data, &cur); err != nil {
				return false, fmt.Errorf("batch %s: %s event: %w", id, ev.Type, err)
			}
		case "batch":
			var b struct {
				Status string `json:"status"`
				Counts Counts `json:"counts"`
			}
			if err := json.Unmarshal(ev.Data, &b); err != nil {
				return false, fmt.Errorf("batch %s: batch event: %w", id, err)
			}
			cur.ID, cur.Status, cur.Counts = id, b.Status, b.Counts
			cur.Total = max(cur.Total, b.Counts.Total())
		case "job":
			var j JobEvent
			if err := json.Unmarshal(ev.Data, &j); err != nil {
				return false, fmt.Errorf("batch %s: job event: %w", id, err)
			}
			out.Job = &j
		default:
			return false, nil // a type this client does not know
		}
		out.Batch = cur
		emit(out)
		if ev.Type == "done" {
			b := cur
			final = &b
			return true, nil
		}
		return false, nil
	}
	err := c.follow(ctx, "/v1/batches/"+escape(id)+"/events", handle, func() bool { return cur.Completed() })
	if err == nil {
		return final, nil
	}
	if !errors.Is(err, errNoStream) {
		return nil, err
	}
	return c.pollBatch(ctx, id, emit)
}

func (c *Client) pollBatch(ctx context.Context, id string, emit func(BatchEvent)) (*Batch, error) {
	var last *Batch
	for {
		b, err := c.GetBatch(ctx, id)
		if err != nil {
			return nil, err
		}
		if last == nil || last.Status != b.Status || last.Counts != b.Counts {
			emit(BatchEvent{Type: "poll", Batch: *b})
		}
		if b.Completed() {
			return b, nil
		}
		last = b
		if err := sleep(ctx, c.cfg.PollInterval); err != nil {
			return nil, err
		}
	}
}

// RunEvent is what WaitRun reports as a run progresses.
type RunEvent struct {
	ID   string
	Type string // snapshot, comparison, run, done; "poll" when polling
	// Run is the run's latest state (status and counts after this event).
	Run Run
	// Comparison is the comparison that changed, for a comparison event.
	Comparison *ComparisonEvent
}

// ComparisonEvent is one comparison's state change.
type ComparisonEvent struct {
	RunID        string    `json:"run_id"`
	ComparisonID string    `json:"comparison_id"`
	JobID        string    `json:"job_id"`
	Target       string    `json:"target"`
	Viewport     string    `json:"viewport"`
	Segment      int       `json:"segment"`
	Status       string    `json:"status"`
	DiffPixels   int64     `json:"diff_pixels"`
	DiffRatio    float64   `json:"diff_ratio"`
	Message      string    `json:"message"`
	At           time.Time `json:"at"`
	// Raw is the whole event, for fields this client has no name for.
	Raw json.RawMessage `json:"-"`
}

// WaitRun waits until the run reached a final status (passed, failed,
// needs_review, error, approved) and returns it with its comparisons, like
// WaitBatch: the live stream, else polling.
func (c *Client) WaitRun(ctx context.Context, id string, onEvent func(RunEvent)) (*Run, error) {
	emit := func(e RunEvent) {
		if onEvent != nil {
			onEvent(e)
		}
	}
	f := &runFollower{id: id, emit: emit}
	err := c.follow(ctx, "/v1/runs/"+escape(id)+"/events", f.handle, f.cur.Finished)
	if err == nil {
		if f.final.Comparisons == nil { // a done event without them: read the run whole
			return c.GetRun(ctx, id)
		}
		return f.final, nil
	}
	if !errors.Is(err, errNoStream) {
		return nil, err
	}
	return c.pollRun(ctx, id, emit)
}

// runFollower follows a run's event stream: cur is the run as the events say, final the
// run of its done event.
type runFollower struct {
	id    string
	emit  func(RunEvent)
	cur   Run
	final *Run
}

// handle applies one event; true at the done event.
func (f *runFollower) handle(ev Event) (bool, error) {
	out := RunEvent{ID: ev.ID, Type: ev.Type}
	switch ev.Type {
	case "snapshot", "done":
		f.cur = Run{}
		if err := json.Unmarshal(ev.Data, &f.cur); err != nil {
			return false, fmt.Errorf("run %s: %s event: %w", f.id, ev.Type, err)
		}
	case "run":
		var r struct {
			Status string    `json:"status"`
			Counts RunCounts `json:"counts"`
		}
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			return false, fmt.Errorf("run %s: run event: %w", f.id, err)
		}
		f.cur.ID, f.cur.Status, f.cur.Counts = f.id, r.Status, r.Counts
	case "comparison":
		var cmp ComparisonEvent
		if err := json.Unmarshal(ev.Data, &cmp); err != nil {
			return false, fmt.Errorf("run %s: comparison event: %w", f.id, err)
		}
		cmp.Raw = ev.Data
		out.Comparison = &cmp
	default:
		return false, nil
	}
	out.Run = f.cur
	f.emit(out)
	if ev.Type == "done" {
		r := f.cur
		f.final = &r
		return true, nil
	}
	return false, nil
}

// pollRun polls the run until it is finished, where the server has no event stream.
func (c *Client) pollRun(ctx context.Context, id string, emit func(RunEvent)) (*Run, error) {
	var last *Run
	for {
		r, err := c.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if last == nil || last.Status != r.Status || last.Counts != r.Counts {
			emit(RunEvent{Type: "poll", Run: *r})
		}
		if r.Finished() {
			return r, nil
		}
		last = r
		if err := sleep(ctx, c.cfg.PollInterval); err != nil {
			return nil, err
		}
	}
}
