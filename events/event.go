package events

import (
	"encoding/json"
	"strings"
	"time"
)

// Event types on the wire (the SSE "event:" field). They are part of the
// public API.
const (
	TypeSnapshot   = "snapshot"
	TypeJob        = "job"
	TypeBatch      = "batch"
	TypeComparison = "comparison"
	TypeRun        = "run"
	TypeDone       = "done"
)

// BatchStream is the Redis Stream key of a batch's events. The hash tag keeps
// each stream in one slot of a Redis Cluster.
func BatchStream(batchID string) string { return "snapq:{events:batch:" + batchID + "}" }

// RunStream is the Redis Stream key of a run's events.
func RunStream(runID string) string { return "snapq:{events:run:" + runID + "}" }

// Event is one state change as published: its type and its JSON data.
type Event struct {
	Type string
	Data any
}

// Entry is an event read back from a stream.
type Entry struct {
	ID   string // the stream entry id, "<ms>-<seq>"
	Type string
	Data json.RawMessage
}

// ErrorInfo is a job's error in a job event.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Job is the data of a job event: one job's state change.
type Job struct {
	BatchID string     `json:"batch_id"`
	JobID   string     `json:"job_id"`
	Name    string     `json:"name"`
	URL     string     `json:"url"`
	Status  string     `json:"status"` // queued, running, retrying, succeeded, failed, canceled
	Attempt int        `json:"attempt"`
	Error   *ErrorInfo `json:"error,omitempty"`
	At      time.Time  `json:"at"` // when the change committed (as the publisher saw it)
}

// StatusRetrying is a job event's status for a failed attempt that will be
// retried (the job itself is queued again).
const StatusRetrying = "retrying"

// Batch is the data of a batch event: the batch's status and counts after a
// job event.
type Batch struct {
	BatchID string `json:"batch_id"`
	Status  string `json:"status"`
	Counts  any    `json:"counts"`
}

// Comparison is the data of a comparison event: one comparison recorded.
type Comparison struct {
	RunID        string    `json:"run_id"`
	ComparisonID string    `json:"comparison_id"`
	JobID        string    `json:"job_id"`
	Target       string    `json:"target"`
	Viewport     string    `json:"viewport"`
	Segment      int       `json:"segment"`
	Status       string    `json:"status"`
	DiffPixels   int64     `json:"diff_pixels"`
	DiffRatio    float64   `json:"diff_ratio"`
	Message      string    `json:"message,omitempty"`
	At           time.Time `json:"at"`
}

// Run is the data of a run event: the run's status and counts after its
// comparisons changed.
type Run struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Counts any    `json:"counts"`
}

// After reports whether stream entry id a comes after b ("<ms>-<seq>", and
// "" or "0" before everything).
func After(a, b string) bool {
	ams, aseq := splitID(a)
	bms, bseq := splitID(b)
	if ams != bms {
		return ams > bms
	}
	return aseq > bseq
}

// ValidID reports whether id is a stream entry id "<ms>-<seq>".
func ValidID(id string) bool {
	ms, seq, ok := strings.Cut(id, "-")
	return ok && digits(ms) && digits(seq)
}

func digits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func splitID(id string) (ms, seq uint64) {
	a, b, _ := strings.Cut(id, "-")
	return parseUint(a), parseUint(b)
}

func parseUint(s string) uint64 {
	var n uint64
	for _, r := range s {
		if r < '0' || r > '9' {
			return n
		}
		n = n*10 + uint64(r-'0')
	}
	return n
}
