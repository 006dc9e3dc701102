package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// queuedJob stores a queued job of a new batch and returns it.
func queuedJob(e *env, attempts int) *jobs.Job {
	j := &jobs.Job{ID: jobs.NewID(), BatchID: jobs.NewID(), URL: "https://a.example/docs", Name: "a.example-docs",
		Options: jobs.DefaultOptions(), Status: jobs.StatusQueued, Attempts: attempts}
	e.store.add(j)
	return j
}

func TestHandlerSuccess(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := queuedJob(e, 0)
	e.renderer.result = &capture.Result{
		HTTPStatus: 200, FinalURL: "https://a.example/docs/", Title: "Docs", PageHeight: 1500,
		Segments: capture.Segments{Total: 3, Captured: 2, Truncated: true},
		Images: []capture.Image{
			{Name: "a.example-docs-001.png", Index: 1, ContentType: "image/png", Data: []byte("png1"), Width: 1280, Height: 720},
			{Name: "a.example-docs-002.png", Index: 2, ContentType: "image/png", Data: []byte("png22"), Width: 1280, Height: 60},
		},
		Files: []capture.File{
			{Kind: capture.OutputHTML, Name: "a.example-docs.html", ContentType: "text/html", Data: []byte("<p>hi</p>")},
			{Kind: capture.OutputText, Name: "a.example-docs.txt", ContentType: "text/plain", Data: []byte("hi"), Chars: 2},
			{Kind: capture.OutputMarkdown, Name: "a.example-docs.md", ContentType: "text/markdown", Data: []byte("# hi"), Chars: 4, Truncated: true},
		},
		WaitErrors:  []string{"selector #app"},
		Partial:     true,
		ContentType: "text/html",
		Timings:     map[string]int64{"navigate": 7},
		// Two bands: each is observed, none is stored.
		ScreenshotCalls: []time.Duration{3 * time.Millisecond, 4 * time.Millisecond},
	}

	var stages []string
	e.h.Stage = func(stage string, d time.Duration) { stages = append(stages, stage) }
	if err := e.h.Capture(jobs.WithLastAttempt(ctx, false), jobs.CapturePayload{JobID: j.ID}); err != nil {
		t.Fatalf("Capture = %v", err)
	}
	// Every stage of the timings but the total, each screenshot call, then the two after
	// the result is stored.
	slices.Sort(stages[:len(stages)-2])
	if diff := cmp.Diff([]string{jobs.StageBand, jobs.StageBand, "files", "navigate", "start", "thumbnail", "upload",
		jobs.StageCommit, jobs.StageEvents}, stages); diff != "" {
		t.Errorf("stages observed (-want +got):\n%s", diff)
	}

	got := e.store.job(t, j.ID)
	if got.Status != jobs.StatusSucceeded || got.Attempts != 1 || got.ErrorCode != "" {
		t.Errorf("job: status %s attempts %d code %q, want succeeded after 1 attempt", got.Status, got.Attempts, got.ErrorCode)
	}
	wantResult := &jobs.Result{HTTPStatus: 200, FinalURL: "https://a.example/docs/", Title: "Docs", PageHeight: 1500,
		Segments: jobs.SegmentCounts{Total: 3, Captured: 2, Truncated: true}, WaitErrors: []string{"selector #app"},
		TextChars: 2, MarkdownChars: 4, MarkdownTruncated: true, Partial: true, ContentType: "text/html"}
	if diff := cmp.Diff(wantResult, got.Result, cmpopts.IgnoreFields(jobs.Result{}, "TimingsMS")); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if got.Result != nil {
		var keys []string
		for k := range got.Result.TimingsMS {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if diff := cmp.Diff([]string{"files", "navigate", "start", "thumbnail", "total", "upload"}, keys); diff != "" {
			t.Errorf("timings_ms keys (-want +got):\n%s", diff)
		}
	}

	prefix := "batches/" + j.BatchID + "/jobs/" + j.ID + "/attempt-1/"
	wantArts := []*jobs.Artifact{
		{JobID: j.ID, Kind: jobs.KindScreenshot, Name: "a.example-docs-001.png", Seq: 1, ObjectKey: prefix + "a.example-docs-001.png",
			ContentType: "image/png", Bytes: 4, Width: 1280, Height: 720, SHA256: sha("png1")},
		{JobID: j.ID, Kind: jobs.KindScreenshot, Name: "a.example-docs-002.png", Seq: 2, ObjectKey: prefix + "a.example-docs-002.png",
			ContentType: "image/png", Bytes: 5, Width: 1280, Height: 60, SHA256: sha("png22")},
		{JobID: j.ID, Kind: capture.OutputHTML, Name: "a.example-docs.html", Seq: 3, ObjectKey: prefix + "a.example-docs.html",
			ContentType: "text/html", Bytes: 9, SHA256: sha("<p>hi</p>")},
		{JobID: j.ID, Kind: capture.OutputText, Name: "a.example-docs.txt", Seq: 4, ObjectKey: prefix + "a.example-docs.txt",
			ContentType: "text/plain", Bytes: 2, SHA256: sha("hi")},
		{JobID: j.ID, Kind: capture.OutputMarkdown, Name: "a.example-docs.md", Seq: 5, ObjectKey: prefix + "a.example-docs.md",
			ContentType: "text/markdown", Bytes: 4, SHA256: sha("# hi")},
	}
	arts := e.store.artifactsOf(j.ID)
	for _, w := range wantArts {
		data := map[string]string{"a.example-docs-001.png": "png1", "a.example-docs-002.png": "png22",
			"a.example-docs.html": "<p>hi</p>", "a.example-docs.txt": "hi", "a.example-docs.md": "# hi"}[w.Name]
		w.CRC32 = crc32.ChecksumIEEE([]byte(data))
	}
	if diff := cmp.Diff(wantArts, arts, cmpopts.IgnoreFields(jobs.Artifact{}, "ID")); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	for _, a := range arts {
		if !jobs.ValidID(a.ID) {
			t.Errorf("artifact %s id %q is not a uuid", a.Name, a.ID)
		}
	}
	wantObjects := map[string]object{
		prefix + "a.example-docs-001.png": {Data: "png1", ContentType: "image/png"},
		prefix + "a.example-docs-002.png": {Data: "png22", ContentType: "image/png"},
		prefix + "a.example-docs.html":    {Data: "<p>hi</p>", ContentType: "text/html", ContentDisposition: `attachment; filename="a.example-docs.html"`},
		prefix + "a.example-docs.txt":     {Data: "hi", ContentType: "text/plain"},
		prefix + "a.example-docs.md":      {Data: "# hi", ContentType: "text/markdown"},
	}
	if diff := cmp.Diff(wantObjects, e.bucket.snapshot()); diff != "" {
		t.Errorf("bucket (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{j.ID + " succeeded"}, e.finals.got()); diff != "" {
		t.Errorf("AfterFinal calls (-want +got):\n%s", diff)
	}
	reqs := e.renderer.requests()
	if len(reqs) != 1 || reqs[0].URL != j.URL || reqs[0].Name != j.Name || reqs[0].Timeout != j.Options.JobTimeout() {
		t.Errorf("renderer requests = %+v, want one for %s named %s", reqs, j.URL, j.Name)
	}
}

// Captured HTML, a download and a PDF target's own file are stored as
// attachments so a browser never renders them from the bucket's origin.
func TestHandlerContentDisposition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string // of the target's response
		file        capture.File
		want        string
	}{
		{name: "html output", contentType: "text/html",
			file: capture.File{Kind: capture.OutputHTML, Name: "p.html", ContentType: "text/html"}, want: `attachment; filename="p.html"`},
		{name: "download", contentType: "application/zip",
			file: capture.File{Kind: capture.FileDownload, Name: "p.zip", ContentType: "application/zip"}, want: `attachment; filename="p.zip"`},
		{name: "pdf target", contentType: "application/pdf",
			file: capture.File{Kind: capture.OutputPDF, Name: "p.pdf", ContentType: "application/pdf"}, want: `attachment; filename="p.pdf"`},
		{name: "pdf printed from a page", contentType: "text/html",
			file: capture.File{Kind: capture.OutputPDF, Name: "p.pdf", ContentType: "application/pdf"}},
		{name: "text", contentType: "text/html",
			file: capture.File{Kind: capture.OutputText, Name: "p.txt", ContentType: "text/plain"}},
		{name: "links", contentType: "text/html",
			file: capture.File{Kind: capture.OutputLinks, Name: "p-links.json", ContentType: "application/json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			j := queuedJob(e, 0)
			tt.file.Data = []byte("x")
			e.renderer.result = &capture.Result{HTTPStatus: 200, ContentType: tt.contentType, Files: []capture.File{tt.file}}
			if err := e.h.Process(context.Background(), j.ID, false); err != nil {
				t.Fatalf("Process = %v", err)
			}
			key := artifacts.Key("batches", j.BatchID, "jobs", j.ID, "attempt-1", tt.file.Name)
			obj, ok := e.bucket.snapshot()[key]
			if !ok {
				t.Fatalf("no object at %s", key)
			}
			if obj.ContentDisposition != tt.want {
				t.Errorf("Content-Disposition = %q, want %q", obj.ContentDisposition, tt.want)
			}
		})
	}
}

func TestHandlerFailures(t *testing.T) {
	t.Parallel()
	storageFull := fmt.Errorf("put k: %w", errors.Join(artifacts.ErrStorageFull, artifacts.ErrUnavailable)) // as artifacts classifies a 507
	okResult := &capture.Result{HTTPStatus: 200, Images: []capture.Image{{Name: "p.png", Index: 1, ContentType: "image/png", Data: []byte("png")}},
		Files: []capture.File{{Kind: capture.OutputHTML, Name: "p.html", ContentType: "text/html", Data: []byte("<p>")}}}
	tests := []struct {
		name        string
		lastAttempt bool
		renderErr   error
		cancel      bool             // the task's ctx is canceled during the capture
		failOn      map[string]error // upload errors by file name
		wantStatus  jobs.JobStatus
		wantCode    string
		wantMsg     string
		wantNoRetry bool // the queue is told not to retry
		// the queue is told no browser could take the job (a retry that is not a failure)
		wantUnavailable bool
	}{
		{name: "non-retryable capture error is final", renderErr: &capture.Error{Code: capture.CodeInvalidSelector, Message: "bad selector"},
			wantStatus: jobs.StatusFailed, wantCode: capture.CodeInvalidSelector, wantMsg: "bad selector", wantNoRetry: true},
		{name: "retryable capture error is retried", renderErr: &capture.Error{Code: capture.CodeConnectionFailed, Message: "refused", Retryable: true},
			wantStatus: jobs.StatusQueued, wantCode: capture.CodeConnectionFailed, wantMsg: "refused"},
		{name: "retryable capture error on the last attempt is final", lastAttempt: true,
			renderErr:  fmt.Errorf("navigate: %w", &capture.Error{Code: capture.CodeConnectionFailed, Message: "refused", Retryable: true}),
			wantStatus: jobs.StatusFailed, wantCode: capture.CodeConnectionFailed, wantMsg: "refused", wantNoRetry: true},
		{name: "unclassified error is internal and retried", renderErr: errors.New("cdp: websocket closed"),
			wantStatus: jobs.StatusQueued, wantCode: jobs.CodeInternal, wantMsg: "cdp: websocket closed"},
		{name: "interrupted job is recorded despite its done ctx", cancel: true, renderErr: errors.New("page closed"),
			wantStatus: jobs.StatusQueued, wantCode: capture.CodeNavigationTimeout, wantMsg: "the job was interrupted: context canceled"},
		// A canceled task is the worker handing it back as it stops: even on its
		// last attempt, or with a capture error that would be final, the job waits
		// for the next worker.
		{name: "interrupted last attempt goes back to the queue", cancel: true, lastAttempt: true, renderErr: errors.New("page closed"),
			wantStatus: jobs.StatusQueued, wantCode: capture.CodeNavigationTimeout, wantMsg: "the job was interrupted: context canceled"},
		{name: "interrupted job with a final capture error goes back to the queue", cancel: true,
			renderErr:  &capture.Error{Code: capture.CodeInvalidSelector, Message: "target closed"},
			wantStatus: jobs.StatusQueued, wantCode: capture.CodeInvalidSelector},
		{name: "storage full is retried", failOn: map[string]error{"p.png": storageFull},
			wantStatus: jobs.StatusQueued, wantCode: jobs.CodeStorageFull},
		{name: "storage full on the last attempt is final", lastAttempt: true,
			failOn:     map[string]error{"p.html": storageFull},
			wantStatus: jobs.StatusFailed, wantCode: jobs.CodeStorageFull, wantNoRetry: true},
		{name: "transient upload failure is retried", failOn: map[string]error{"p.html": artifacts.ErrUnavailable},
			wantStatus: jobs.StatusQueued, wantCode: jobs.CodeUploadFailed},
		{name: "permanent upload failure is final", failOn: map[string]error{"p.png": errors.New("AccessDenied")},
			wantStatus: jobs.StatusFailed, wantCode: jobs.CodeUploadFailed, wantNoRetry: true},
		{name: "transient upload failure on the last attempt is final", lastAttempt: true, failOn: map[string]error{"p.png": artifacts.ErrUnavailable},
			wantStatus: jobs.StatusFailed, wantCode: jobs.CodeUploadFailed, wantNoRetry: true},
		{name: "no browser available goes back to the queue, not counted as a failure",
			renderErr:  &capture.Error{Code: capture.CodeBrowserUnavailable, Message: "no browser could take the job: 503", Retryable: true, Err: capture.ErrUnavailable},
			wantStatus: jobs.StatusQueued, wantCode: capture.CodeBrowserUnavailable, wantUnavailable: true},
		{name: "no browser available on the last attempt is final",
			lastAttempt: true,
			renderErr:   &capture.Error{Code: capture.CodeBrowserUnavailable, Message: "no browser could take the job: 503", Retryable: true, Err: capture.ErrUnavailable},
			wantStatus:  jobs.StatusFailed, wantCode: capture.CodeBrowserUnavailable, wantNoRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			j := queuedJob(e, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e.renderer.result, e.renderer.err = okResult, tt.renderErr
			if tt.cancel {
				e.renderer.during = cancel
			}
			for k, v := range tt.failOn {
				e.bucket.failOn[k] = v
			}

			err := e.h.Capture(jobs.WithLastAttempt(ctx, tt.lastAttempt), jobs.CapturePayload{JobID: j.ID})
			if err == nil {
				t.Fatal("Capture = nil, want the failure")
			}
			if got := errors.Is(err, jobs.ErrNoRetry); got != tt.wantNoRetry {
				t.Errorf("Capture = %v: ErrNoRetry %v, want %v", err, got, tt.wantNoRetry)
			}
			if got := jobs.IsBrowserUnavailable(err); got != tt.wantUnavailable {
				t.Errorf("Capture = %v: IsBrowserUnavailable %v, want %v", err, got, tt.wantUnavailable)
			}
			got := e.store.job(t, j.ID)
			if got.Status != tt.wantStatus || got.ErrorCode != tt.wantCode || got.Attempts != 2 {
				t.Errorf("job: status %s code %s attempts %d, want %s %s after attempt 2", got.Status, got.ErrorCode, got.Attempts, tt.wantStatus, tt.wantCode)
			}
			if tt.wantMsg != "" && got.ErrorMessage != tt.wantMsg {
				t.Errorf("error message = %q, want %q", got.ErrorMessage, tt.wantMsg)
			}
			if got.Result != nil || len(e.store.artifactsOf(j.ID)) != 0 {
				t.Errorf("failed job has result %+v and artifacts %v", got.Result, e.store.artifactsOf(j.ID))
			}
			var wantFinals []string
			if tt.wantStatus == jobs.StatusFailed {
				wantFinals = []string{j.ID + " failed"}
			}
			if diff := cmp.Diff(wantFinals, e.finals.got()); diff != "" {
				t.Errorf("AfterFinal calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandlerUploadFailureMessage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := queuedJob(e, 0)
	e.renderer.result = &capture.Result{Images: []capture.Image{{Name: "p.png", Index: 1, Data: []byte("png")}}}
	e.bucket.failOn["p.png"] = errors.New("AccessDenied")
	_ = e.h.Process(context.Background(), j.ID, false)
	got := e.store.job(t, j.ID)
	want := fmt.Sprintf("upload p.png: put %s: AccessDenied", artifacts.Key("batches", j.BatchID, "jobs", j.ID, "attempt-1", "p.png"))
	if got.ErrorMessage != want {
		t.Errorf("error message = %q, want %q", got.ErrorMessage, want)
	}
}

// A job that is final already (a duplicate delivery, a canceled job) is not
// captured again, and its hooks do not run again.
func TestHandlerSkipsFinalJob(t *testing.T) {
	t.Parallel()
	for _, status := range []jobs.JobStatus{jobs.StatusSucceeded, jobs.StatusFailed, jobs.StatusCanceled} {
		t.Run(string(status), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			j := &jobs.Job{ID: jobs.NewID(), BatchID: jobs.NewID(), URL: "https://a.example/", Name: "a", Options: jobs.DefaultOptions(),
				Status: status, Attempts: 1}
			e.store.add(j)
			e.renderer.result = &capture.Result{Images: []capture.Image{{Name: "a.png", Index: 1, Data: []byte("png")}}}

			if err := e.h.Process(context.Background(), j.ID, true); err != nil {
				t.Fatalf("Process = %v, want nil", err)
			}
			if diff := cmp.Diff(j, e.store.job(t, j.ID)); diff != "" {
				t.Errorf("job changed (-want +got):\n%s", diff)
			}
			if n := len(e.bucket.snapshot()); n != 0 {
				t.Errorf("%d objects uploaded for a final job", n)
			}
			if calls := e.finals.got(); len(calls) != 0 {
				t.Errorf("AfterFinal ran for a final job: %v", calls)
			}
		})
	}
}

func TestHandlerUnknownJobIsNotRetried(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if err := e.h.Process(context.Background(), jobs.NewID(), false); !errors.Is(err, jobs.ErrNoRetry) {
		t.Fatalf("Process unknown job = %v, want ErrNoRetry", err)
	}
}

// When another attempt took the job over during the capture, this attempt's
// result is discarded: the job stays the other attempt's, no hook runs, and the
// objects it uploaded (under its own attempt's keys) are deleted.
func TestHandlerTakenOverDiscardsResult(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := queuedJob(e, 0)
	e.renderer.result = &capture.Result{HTTPStatus: 200, Images: []capture.Image{{Name: "p.png", Index: 1, Data: []byte("png")}}}
	e.renderer.during = func() {
		if _, started, err := e.store.StartJob(ctx, j.ID); err != nil || !started {
			t.Errorf("second StartJob = %v, %v", started, err)
		}
	}
	if err := e.h.Process(ctx, j.ID, false); err != nil {
		t.Fatalf("Process = %v, want nil", err)
	}
	got := e.store.job(t, j.ID)
	if got.Status != jobs.StatusRunning || got.Attempts != 2 || got.Result != nil {
		t.Errorf("job: status %s attempts %d result %+v, want running attempt 2 without result", got.Status, got.Attempts, got.Result)
	}
	if calls := e.finals.got(); len(calls) != 0 {
		t.Errorf("AfterFinal ran for a discarded result: %v", calls)
	}
	if objs := e.bucket.snapshot(); len(objs) != 0 {
		t.Errorf("the discarded attempt left objects: %v", objs)
	}
}

func TestLastAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{name: "outside a queue there is no retry", ctx: context.Background(), want: true},
		{name: "queue will retry", ctx: jobs.WithLastAttempt(context.Background(), false), want: false},
		{name: "queue's last attempt", ctx: jobs.WithLastAttempt(context.Background(), true), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := jobs.LastAttempt(tt.ctx); got != tt.want {
				t.Errorf("LastAttempt = %v, want %v", got, tt.want)
			}
		})
	}
}

// A failed capture's log (the steps before the failure and the failed one) is
// the job's result; a retry's replaces it.
func TestHandlerFailedJobKeepsLog(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := queuedJob(e, 0)
	attempt := func(failed string) *capture.Error {
		return &capture.Error{Code: capture.CodeSelectorTimeout, Message: failed + " not visible", Retryable: true,
			Result: &capture.Result{HTTPStatus: 200, FinalURL: "https://a.example/docs/", Timings: map[string]int64{"navigate": 5},
				Log: []capture.LogEntry{
					{Index: 0, Type: "emulate.user_agent", Target: "bot", OK: true},
					{Index: 1, Type: "wait", OK: false, Error: failed + " not visible"},
				}}}
	}
	ignore := cmpopts.IgnoreFields(jobs.Result{}, "TimingsMS")

	e.renderer.err = attempt("#first")
	_ = e.h.Process(ctx, j.ID, false)
	got := e.store.job(t, j.ID)
	want := &jobs.Result{HTTPStatus: 200, FinalURL: "https://a.example/docs/", Log: []capture.LogEntry{
		{Index: 0, Type: "emulate.user_agent", Target: "bot", OK: true},
		{Index: 1, Type: "wait", OK: false, Error: "#first not visible"},
	}}
	if got.Status != jobs.StatusQueued || got.ErrorCode != capture.CodeSelectorTimeout {
		t.Fatalf("after attempt 1: status %s code %s, want queued %s", got.Status, got.ErrorCode, capture.CodeSelectorTimeout)
	}
	if diff := cmp.Diff(want, got.Result, ignore); diff != "" {
		t.Errorf("result after attempt 1 (-want +got):\n%s", diff)
	}
	if got.Result != nil {
		if _, ok := got.Result.TimingsMS["total"]; !ok || got.Result.TimingsMS["navigate"] != 5 {
			t.Errorf("timings_ms = %v, want navigate 5 and total", got.Result.TimingsMS)
		}
	}

	e.renderer.err = attempt("#second")
	_ = e.h.Process(ctx, j.ID, true)
	got = e.store.job(t, j.ID)
	want.Log[1].Error = "#second not visible"
	if got.Status != jobs.StatusFailed || got.Attempts != 2 {
		t.Errorf("after attempt 2: status %s attempts %d, want failed after 2", got.Status, got.Attempts)
	}
	if diff := cmp.Diff(want, got.Result, ignore); diff != "" {
		t.Errorf("result after attempt 2 (-want +got):\n%s", diff)
	}
}

// A suite journey's job (KeepCheckpoints) that fails at a step keeps the
// images its screenshot actions took before it, stored with the failed job;
// any other job stores none.
func TestHandlerFailedJourneyKeepsCheckpoints(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			j := &jobs.Job{ID: jobs.NewID(), BatchID: jobs.NewID(), URL: "https://a.example/docs", Name: "a.example-docs",
				Options: jobs.DefaultOptions(), Status: jobs.StatusQueued}
			j.Options.KeepCheckpoints = keep
			e.store.add(j)
			e.renderer.err = &capture.Error{Code: capture.CodeActionFailed, Message: "action 2 (click) failed",
				Result: &capture.Result{Images: []capture.Image{{Name: "a.example-docs-list.png", Index: 1,
					ContentType: "image/png", Data: []byte("list"), Width: 800, Height: 600}},
					Log: []capture.LogEntry{{Index: 0, Type: "screenshot", Target: "list", OK: true},
						{Index: 2, Type: "click", Target: "#next", Error: "no element"}}}}
			if err := e.h.Process(context.Background(), j.ID, false); !errors.Is(err, jobs.ErrNoRetry) {
				t.Fatalf("Process = %v, want a final failure", err)
			}
			got := e.store.job(t, j.ID)
			arts := e.store.artifactsOf(j.ID)
			if got.Status != jobs.StatusFailed || got.ErrorCode != capture.CodeActionFailed {
				t.Fatalf("job %s %s, want failed action_failed", got.Status, got.ErrorCode)
			}
			objects := len(e.bucket.snapshot())
			if !keep {
				if len(arts) != 0 || objects != 0 {
					t.Fatalf("a job without checkpoints kept %d artifacts, %d objects", len(arts), objects)
				}
				return
			}
			if len(arts) != 1 || arts[0].Name != "a.example-docs-list.png" || arts[0].Width != 800 || objects != 1 {
				t.Fatalf("kept artifacts %+v, %d objects; want the list checkpoint", arts, objects)
			}
		})
	}
}

// A retry that fails before the capture found anything leaves no result of
// an earlier attempt behind, and an error's message is capped.
func TestHandlerFailureClearsOldResultAndCapsMessage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := queuedJob(e, 0)
	e.renderer.err = &capture.Error{Code: capture.CodeConnectionFailed, Message: "refused", Retryable: true,
		Result: &capture.Result{Log: []capture.LogEntry{{Type: "navigate", Error: "refused"}}}}
	_ = e.h.Process(ctx, j.ID, false)
	e.renderer.err = errors.New(strings.Repeat("é", 1<<20))
	_ = e.h.Process(ctx, j.ID, true)
	got := e.store.job(t, j.ID)
	if got.Result != nil {
		t.Errorf("result = %+v, want none (the last attempt found nothing)", got.Result)
	}
	if len(got.ErrorMessage) > capture.MaxMessageBytes || !strings.HasSuffix(got.ErrorMessage, capture.TruncatedMarker) ||
		!utf8.ValidString(got.ErrorMessage) {
		t.Errorf("error message: %d bytes, valid UTF-8 %v; want at most %d ending in %q",
			len(got.ErrorMessage), utf8.ValidString(got.ErrorMessage), capture.MaxMessageBytes, capture.TruncatedMarker)
	}
}

// Each attempt writes keys of its own (attempt-<n>): the attempt that commits
// deletes what earlier attempts left, but never another object of the job (a
// diff); an upload refused for good deletes what its attempt had uploaded.
func TestHandlerAttemptKeysAndCleanup(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := queuedJob(e, 0)
	e.renderer.result = &capture.Result{HTTPStatus: 200, ContentType: "text/html",
		Images: []capture.Image{{Name: "p.png", Index: 1, ContentType: "image/png", Data: []byte("png")}},
		Files:  []capture.File{{Kind: capture.OutputText, Name: "p.txt", ContentType: "text/plain", Data: []byte("txt")}}}

	// Attempt 1: the second upload fails (storage unavailable); the first object stays.
	e.bucket.failOn["p.txt"] = artifacts.ErrUnavailable
	if err := e.h.Process(ctx, j.ID, false); err == nil || errors.Is(err, jobs.ErrNoRetry) {
		t.Fatalf("attempt 1 = %v, want a retryable failure", err)
	}
	if objs := e.bucket.snapshot(); len(objs) != 1 {
		t.Errorf("after the failed upload the bucket holds %v, want attempt 1's p.png", objs)
	}

	// Objects attempt 2 left (a worker killed mid-upload), and a diff beside the attempts.
	leftover := artifacts.Key("batches", j.BatchID, "jobs", j.ID, "attempt-2", "p.png")
	diffKey := artifacts.Key("batches", j.BatchID, "jobs", j.ID, "p-diff-001.png")
	for _, k := range []string{leftover, diffKey} {
		if _, err := e.bucket.Put(ctx, k, []byte("old"), "image/png", artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.store.StartJob(ctx, j.ID); err != nil { // attempt 2, then lost
		t.Fatal(err)
	}
	delete(e.bucket.failOn, "p.txt")
	if err := e.h.Process(ctx, j.ID, false); err != nil { // attempt 3 commits
		t.Fatalf("attempt 3 = %v", err)
	}
	prefix := "batches/" + j.BatchID + "/jobs/" + j.ID + "/"
	want := []string{prefix + "attempt-3/p.png", prefix + "attempt-3/p.txt", diffKey}
	var got []string
	for k := range e.bucket.snapshot() {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bucket keys (-want +got):\n%s", diff)
	}
	for _, a := range e.store.artifactsOf(j.ID) {
		if !strings.HasPrefix(a.ObjectKey, prefix+"attempt-3/") {
			t.Errorf("artifact %s at %s, want attempt 3's key", a.Name, a.ObjectKey)
		}
	}
}

func TestHandlerUploadRefusedDeletesAttemptObjects(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := queuedJob(e, 0)
	e.renderer.result = &capture.Result{HTTPStatus: 200, ContentType: "text/html",
		Images: []capture.Image{{Name: "p.png", Index: 1, ContentType: "image/png", Data: []byte("png")}},
		Files:  []capture.File{{Kind: capture.OutputText, Name: "p.txt", ContentType: "text/plain", Data: []byte("txt")}}}
	e.bucket.failOn["p.txt"] = errors.New("AccessDenied")
	if err := e.h.Process(context.Background(), j.ID, false); !errors.Is(err, jobs.ErrNoRetry) {
		t.Fatalf("Process = %v, want a final failure", err)
	}
	if objs := e.bucket.snapshot(); len(objs) != 0 {
		t.Errorf("after the refused upload the bucket holds %v, want nothing", objs)
	}
}
