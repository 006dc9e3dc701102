package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// A failed attempt's result (its log) is stored with the failure; the next
// attempt starts without it and its own failure replaces it.
func TestFailJobKeepsResult(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	_, js := newBatch(t, st, 1)
	id := js[0].ID
	failed := func(sel string) *jobs.Result {
		return &jobs.Result{HTTPStatus: 200, FinalURL: "https://example.com/pa", TimingsMS: map[string]int64{"navigate": 3, "total": 9},
			Log: []capture.LogEntry{
				{Index: 0, Type: "emulate.user_agent", Target: "bot", OK: true, MS: 1},
				{Index: 1, Type: "wait", OK: false, MS: 2, Error: "selector " + sel + " not visible"},
			}}
	}
	fail := func(attempt int, res *jobs.Result, final bool) *jobs.Job {
		t.Helper()
		if _, started, err := st.StartJob(ctx, id); err != nil || !started {
			t.Fatalf("StartJob = %v, %v", started, err)
		}
		if got, _ := st.GetJob(ctx, id); got.Result != nil {
			t.Errorf("attempt %d started with the earlier attempt's result %+v", attempt, got.Result)
		}
		e := jobs.JobError{Code: capture.CodeSelectorTimeout, Message: "not visible"}
		if err := st.FailJob(ctx, id, attempt, e, res, final); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	got := fail(1, failed("#a"), false)
	if diff := cmp.Diff(failed("#a"), got.Result); got.Status != jobs.StatusQueued || diff != "" {
		t.Errorf("after attempt 1: status %s, result (-want +got):\n%s", got.Status, diff)
	}
	got = fail(2, failed("#b"), false)
	if diff := cmp.Diff(failed("#b"), got.Result); diff != "" {
		t.Errorf("after attempt 2: result (-want +got):\n%s", diff)
	}
	got = fail(3, nil, true)
	if got.Status != jobs.StatusFailed || got.Result != nil {
		t.Errorf("after attempt 3 (no result): status %s, result %+v; want failed without a result", got.Status, got.Result)
	}
}
