package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
)

// Renderer loads a page and captures it. capture.Browser implements it.
type Renderer interface {
	Capture(ctx context.Context, req capture.Request) (*capture.Result, error)
}

// ArtifactStore keeps artifact bytes. artifacts.Store implements it.
type ArtifactStore interface {
	Put(ctx context.Context, key string, data []byte, contentType string, opts artifacts.PutOptions) (artifacts.Object, error)
}

// Handler runs capture tasks in a worker.
type Handler struct {
	Repo     JobStore
	Renderer Renderer
	Store    ArtifactStore
	Logger   *slog.Logger
	// AfterFinal runs, in order, once a job reached its final status in this
	// worker: features built on jobs announce it at once (a batch's webhook, a
	// run capture's comparison). A hook's failure is its own to log; the
	// api's reconciler catches up on whatever a hook missed.
	AfterFinal []func(ctx context.Context, job *Job)
}

// Capture is the asynq handler of KindCapture (see Register).
func (h *Handler) Capture(ctx context.Context, p CapturePayload) error {
	return h.Process(ctx, p.JobID, LastAttempt(ctx))
}

// Process runs one attempt of a job. lastAttempt says whether the queue will
// retry a transient failure.
func (h *Handler) Process(ctx context.Context, jobID string, lastAttempt bool) error {
	job, started, err := h.Repo.StartJob(ctx, jobID)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("job %s: %w", jobID, ErrNoRetry)
	}
	if err != nil {
		return fmt.Errorf("start job %s: %w", jobID, err)
	}
	if !started {
		return nil // already final (a duplicate delivery, or canceled)
	}
	log := h.logger().With("job_id", job.ID, "batch_id", job.BatchID, "url", job.URL, "attempt", job.Attempts)
	begin := time.Now()

	result, arts, jerr := h.run(ctx, job)
	if jerr != nil && jerr.Code == capture.CodeBrowserUnavailable && !lastAttempt {
		// No browser could take it: back to the queue, which retries it without
		// counting a failure (ErrBrowserUnavailable).
		if err := h.record(ctx, log, job, begin, jerr, false); err != nil {
			return err
		}
		return fmt.Errorf("job %s: %s: %w", job.ID, jerr.Message, ErrBrowserUnavailable)
	}
	if jerr != nil {
		return h.fail(ctx, log, job, begin, jerr, lastAttempt || !jerr.retryable)
	}
	result.TimingsMS["total"] = time.Since(begin).Milliseconds()
	cctx, cancel := Bookkeeping(ctx)
	defer cancel()
	ok, err := h.Repo.CompleteJob(cctx, job.ID, job.Attempts, result, arts)
	if errors.Is(err, ErrArtifactNameTaken) {
		// run checks the names; this is the store's word for a clash it missed.
		return h.fail(ctx, log, job, begin, &jobError{JobError{Code: CodeArtifactNameConflict, Message: err.Error()}, false, nil}, true)
	}
	if err != nil {
		return fmt.Errorf("complete job %s: %w", job.ID, err)
	}
	if !ok {
		log.Warn("job was taken over by another attempt; result discarded")
		return nil
	}
	h.afterFinal(ctx, job)
	log.Info("job succeeded", "http_status", result.HTTPStatus, "artifacts", len(arts), "partial", result.Partial,
		"segments", result.Segments.Captured, "ms", result.TimingsMS["total"])
	return nil
}

// fail records a failed attempt, with what it found before failing (begin is
// when it started); final marks the job failed and tells the queue not to
// retry. The message is capped: a vendor's error text can be long too.
func (h *Handler) fail(ctx context.Context, log *slog.Logger, job *Job, begin time.Time, jerr *jobError, final bool) error {
	if err := h.record(ctx, log, job, begin, jerr, final); err != nil {
		return err
	}
	if final {
		h.afterFinal(ctx, job)
		return fmt.Errorf("%s: %s: %w", jerr.Code, jerr.Message, ErrNoRetry)
	}
	return fmt.Errorf("%s: %s", jerr.Code, jerr.Message)
}

// record writes a failed attempt down (fail without the queue's answer).
func (h *Handler) record(ctx context.Context, log *slog.Logger, job *Job, begin time.Time, jerr *jobError, final bool) error {
	jerr.Message = capture.CapMessage(jerr.Message)
	log.Warn("job attempt failed", "code", jerr.Code, "err", jerr.Message, "final", final)
	if jerr.result != nil {
		jerr.result.TimingsMS["total"] = time.Since(begin).Milliseconds()
	}
	// Record the failure even if the task's ctx is done (shutdown,
	// timeout): the row must not stay "running".
	rctx, cancel := Bookkeeping(ctx)
	defer cancel()
	if err := h.Repo.FailJob(rctx, job.ID, job.Attempts, jerr.JobError, jerr.result, final); err != nil {
		return fmt.Errorf("record failure of job %s: %w", job.ID, err)
	}
	return nil
}

// afterFinal runs the AfterFinal hooks; they get a bookkeeping context so a
// shutdown does not skip them.
func (h *Handler) afterFinal(ctx context.Context, job *Job) {
	ctx, cancel := Bookkeeping(ctx)
	defer cancel()
	for _, hook := range h.AfterFinal {
		hook(ctx, job)
	}
}

type jobError struct {
	JobError
	retryable bool
	// result is what a failed capture found (capture.Error.Result), or nil:
	// a failure after the capture (an upload) stores no result.
	result *Result
}

func (h *Handler) run(ctx context.Context, job *Job) (*Result, []*Artifact, *jobError) {
	// The capture's own budget (timeout_ms) starts when a tab is free; ctx (the
	// task's deadline) bounds the wait for one.
	res, err := h.Renderer.Capture(ctx, job.Options.CaptureRequest(job.URL, job.Name))
	if err != nil {
		var ce *capture.Error
		if errors.As(err, &ce) {
			var partial *Result
			if ce.Result != nil {
				partial = newResult(ce.Result)
			}
			return nil, nil, &jobError{JobError{Code: ce.Code, Message: ce.Message}, ce.Retryable, partial}
		}
		if ctx.Err() != nil {
			return nil, nil, &jobError{JobError{Code: capture.CodeNavigationTimeout, Message: "the job was interrupted: " + ctx.Err().Error()}, true, nil}
		}
		return nil, nil, &jobError{JobError{Code: CodeInternal, Message: err.Error()}, true, nil}
	}
	if name, ok := repeatedName(res); ok {
		return nil, nil, &jobError{JobError{Code: CodeArtifactNameConflict,
			Message: fmt.Sprintf("the capture gave two artifacts the name %q; nothing was stored", name)}, false, nil}
	}
	upStart := time.Now()
	arts := make([]*Artifact, 0, len(res.Images)+len(res.Files))
	for _, img := range res.Images {
		key := artifacts.Key("batches", job.BatchID, "jobs", job.ID, img.Name)
		obj, err := h.Store.Put(ctx, key, img.Data, img.ContentType, artifacts.PutOptions{})
		if err != nil {
			return nil, nil, &jobError{JobError{Code: CodeUploadFailed, Message: fmt.Sprintf("upload %s: %v", img.Name, err)},
				artifacts.IsTransient(err) || ctx.Err() != nil, nil}
		}
		arts = append(arts, &Artifact{ID: NewID(), JobID: job.ID, Kind: KindScreenshot, Name: img.Name, Seq: img.Index,
			ObjectKey: obj.Key, ContentType: img.ContentType, Bytes: obj.Bytes, Width: img.Width, Height: img.Height,
			SHA256: obj.SHA256})
	}
	textChars, mdChars, mdTruncated := 0, 0, false
	for i, f := range res.Files {
		key := artifacts.Key("batches", job.BatchID, "jobs", job.ID, f.Name)
		var opts artifacts.PutOptions
		if servedAsDownload(f, res) {
			// Captured HTML, a PDF target's own file and a download are the target's
			// content: a browser must never render them from the bucket's origin.
			opts.ContentDisposition = `attachment; filename="` + f.Name + `"`
		}
		obj, err := h.Store.Put(ctx, key, f.Data, f.ContentType, opts)
		if err != nil {
			return nil, nil, &jobError{JobError{Code: CodeUploadFailed, Message: fmt.Sprintf("upload %s: %v", f.Name, err)},
				artifacts.IsTransient(err) || ctx.Err() != nil, nil}
		}
		arts = append(arts, &Artifact{ID: NewID(), JobID: job.ID, Kind: f.Kind, Name: f.Name, Seq: len(res.Images) + i + 1,
			ObjectKey: obj.Key, ContentType: f.ContentType, Bytes: obj.Bytes, SHA256: obj.SHA256})
		switch f.Kind {
		case capture.OutputText:
			textChars = f.Chars
		case capture.OutputMarkdown:
			mdChars, mdTruncated = f.Chars, f.Truncated
		}
	}
	result := newResult(res)
	result.TextChars = textChars
	result.MarkdownChars, result.MarkdownTruncated = mdChars, mdTruncated
	result.TimingsMS["upload"] = time.Since(upStart).Milliseconds()
	return result, arts, nil
}

// newResult is the Result of what the capture reported, as stored: of a finished capture, or,
// for a failed one, what it had found (its log ending with the failed step).
func newResult(res *capture.Result) *Result {
	timings := make(map[string]int64, len(res.Timings)+2)
	for k, v := range res.Timings {
		timings[k] = v
	}
	return &Result{
		HTTPStatus:      res.HTTPStatus,
		FinalURL:        res.FinalURL,
		Title:           res.Title,
		PageHeight:      res.PageHeight,
		Segments:        SegmentCounts{Total: res.Segments.Total, Captured: res.Segments.Captured, Truncated: res.Segments.Truncated},
		WaitErrors:      res.WaitErrors,
		BlockedRequests: res.BlockedRequests,
		TimingsMS:       timings,
		Log:             res.Log,
		LogTruncated:    res.LogTruncated,
		Evaluations:     res.Evaluations,
		Stabilization:   res.Stabilization,
		Masks:           res.Masks,
		Partial:         res.Partial,
		ContentType:     res.ContentType,
		PDFPages:        res.PDFPages,
		SkippedOutputs:  res.Skipped,
	}
}

// repeatedName finds a name two of the capture's images and files share: the
// store keeps one artifact per name, and the second upload would overwrite
// the first object.
func repeatedName(res *capture.Result) (string, bool) {
	seen := make(map[string]bool, len(res.Images)+len(res.Files))
	for _, img := range res.Images {
		if seen[img.Name] {
			return img.Name, true
		}
		seen[img.Name] = true
	}
	for _, f := range res.Files {
		if seen[f.Name] {
			return f.Name, true
		}
		seen[f.Name] = true
	}
	return "", false
}

// servedAsDownload reports the files stored with Content-Disposition: attachment: the html
// output, a download's body and the PDF a PDF target served (not one Chromium printed).
func servedAsDownload(f capture.File, res *capture.Result) bool {
	switch f.Kind {
	case capture.OutputHTML, capture.FileDownload:
		return true
	case capture.OutputPDF:
		return res.ContentType == "application/pdf"
	}
	return false
}

func (h *Handler) logger() *slog.Logger { return Log(h.Logger) }
