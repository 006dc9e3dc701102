package jobs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"strings"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/thumbnail"
)

// Renderer loads a page and captures it. capture.Browser implements it.
type Renderer interface {
	Capture(ctx context.Context, req capture.Request) (*capture.Result, error)
}

// ArtifactStore keeps artifact bytes. artifacts.Store implements it.
type ArtifactStore interface {
	Put(ctx context.Context, key string, data []byte, contentType string, opts artifacts.PutOptions) (artifacts.Object, error)
}

// ContentStore keeps artifact bytes by their SHA-256 (content-addressed):
// identical bytes are stored once. artifacts.Store implements it.
type ContentStore interface {
	PutContent(ctx context.Context, data []byte, contentType string) (artifacts.Object, error)
}

// Handler runs capture tasks in a worker.
type Handler struct {
	Repo     JobStore
	Renderer Renderer
	Store    ArtifactStore
	// Content, when set, stores every artifact content-addressed
	// (artifacts.ContentKey) instead of under the attempt's own keys: a
	// re-run of an unchanged page adds rows, not bytes. The attempt fence
	// holds trivially (a key always holds the same bytes), and nothing the
	// handler stored this way is deleted by it: another job's rows may name
	// the same object; the orphan sweep removes what no row names.
	Content ContentStore
	// SkipThumbnails stores no preview of the first screenshot
	// (SNAPQ_THUMBNAILS=false).
	SkipThumbnails bool
	// Uploads, when set, counts uploaded and reused (deduplicated) bytes.
	Uploads func(reused bool, bytes int64)
	Logger  *slog.Logger
	// AfterFinal runs, in order, once a job reached its final status in this
	// worker: features built on jobs announce it at once (a batch's webhook, a
	// run capture's comparison). A hook's failure is its own to log; the
	// api's reconciler catches up on whatever a hook missed.
	AfterFinal []func(ctx context.Context, job *Job)
	// Hosts, when set, caps the captures of one target host running at once
	// across workers (hostcap.go): a job's host_concurrency, or
	// HostConcurrency (0: no cap) for jobs without one.
	Hosts           HostSlots
	HostConcurrency int
	// HostWait is how long a job waits for its host's slot before its task
	// goes back to the queue (default DefaultHostWait).
	HostWait time.Duration
	// Auth logs in the jobs that name an auth profile (auth.go); nil: such
	// jobs fail with auth_failed.
	Auth Authenticator
	// Cache, when set, lets jobs with options.max_age_s reuse a recent
	// capture instead of rendering (cache.go).
	Cache ResultCache
	// MaxInFlight caps an owner's unfinished jobs when a crawl page adds
	// jobs to its batch (SNAPQ_MAX_JOBS_IN_FLIGHT; 0: no cap).
	MaxInFlight int
	// Captured, when set, counts each job attempt that reached its outputs:
	// rendered by a browser (cached=false) or reused from the cache.
	Captured func(cached bool)
	// Stage, when set, gets the time of each stage of a successful attempt:
	// every key of its result's timings_ms but "total", then StageCommit and
	// StageEvents (stages.go). The worker exports them as a histogram.
	Stage func(stage string, d time.Duration)
}

// Capture is the asynq handler of KindCapture (see Register).
func (h *Handler) Capture(ctx context.Context, p CapturePayload) error {
	return h.Process(ctx, p.JobID, LastAttempt(ctx))
}

// Process runs one attempt of a job. lastAttempt says whether the queue will
// retry a transient failure.
func (h *Handler) Process(ctx context.Context, jobID string, lastAttempt bool) error {
	entered := time.Now()
	release, err := h.hostSlot(ctx, jobID, lastAttempt)
	if err != nil {
		return err
	}
	defer release()
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

	var result *Result
	var arts []*Artifact
	var links []string    // a crawl page's (crawl.go)
	if job.Crawl == nil { // a crawl page's links come from its own load
		result, arts = h.fromCache(ctx, job)
	}
	cached := result != nil
	var jerr *jobError
	if cached {
		release()
		log.Info("capture reused from the result cache", "cached_from", result.CachedFrom)
	} else {
		result, arts, jerr = h.run(ctx, job, release, &links)
	}
	if h.Captured != nil && jerr == nil {
		h.Captured(cached)
	}
	if jerr != nil && jerr.Code == capture.CodeBrowserUnavailable && !lastAttempt {
		// No browser could take it: back to the queue, which retries it without
		// counting a failure (ErrBrowserUnavailable).
		if err := h.record(ctx, log, job, begin, jerr, false); err != nil {
			return err
		}
		return fmt.Errorf("job %s: %s: %w", job.ID, jerr.Message, ErrBrowserUnavailable)
	}
	if jerr != nil {
		// A canceled task context (not its deadline) is the worker handing the
		// task back to the queue as it stops: whatever the capture made of
		// the interruption, the job is not done with.
		interrupted := errors.Is(ctx.Err(), context.Canceled)
		return h.fail(ctx, log, job, begin, jerr, (lastAttempt || !jerr.retryable) && !interrupted, arts...)
	}
	if !cached {
		h.startStages(result, job, entered, begin)
	}
	result.TimingsMS["total"] = time.Since(begin).Milliseconds()
	return h.complete(ctx, log, job, result, arts, links, cached, begin)
}

// complete commits a successful attempt's result and artifacts and runs the
// AfterFinal hooks.
func (h *Handler) complete(ctx context.Context, log *slog.Logger, job *Job, result *Result, arts []*Artifact, links []string,
	cached bool, begin time.Time) error {
	cctx, cancel := Bookkeeping(ctx)
	defer cancel()
	var ok bool
	var err error
	commit := time.Now()
	if cs, crawls := h.Repo.(CrawlStore); crawls && job.Crawl != nil {
		var added int
		ok, added, err = cs.CompleteCrawlJob(cctx, job.ID, job.Attempts, result, arts, links, h.MaxInFlight)
		if ok {
			log.Info("crawl page done", "depth", job.Crawl.Depth, "links", len(links), "added", added)
		}
	} else {
		ok, err = h.Repo.CompleteJob(cctx, job.ID, job.Attempts, result, arts)
	}
	if errors.Is(err, ErrArtifactNameTaken) {
		// run checks the names; this is the store's word for a clash it missed.
		if !cached { // a hit's objects are its source's
			h.deleteObjects(cctx, log, arts)
		}
		return h.fail(ctx, log, job, begin, &jobError{JobError{Code: CodeArtifactNameConflict, Message: err.Error()}, false, nil}, true)
	}
	if err != nil {
		return fmt.Errorf("complete job %s: %w", job.ID, err)
	}
	if !ok {
		log.Warn("job was taken over by another attempt; result discarded")
		if !cached { // a hit's objects are its source's
			h.deleteObjects(cctx, log, arts)
		}
		return nil
	}
	h.observe(StageCommit, commit)
	h.deleteOtherAttempts(cctx, log, job)
	final := time.Now()
	h.afterFinal(ctx, job)
	h.observe(StageEvents, final)
	log.Info("job succeeded", "http_status", result.HTTPStatus, "artifacts", len(arts), "partial", result.Partial,
		"segments", result.Segments.Captured, "ms", result.TimingsMS["total"])
	return nil
}

// AttemptKey is where an attempt of job stores the artifact name:
// batches/<batch>/jobs/<job>/attempt-<n>/<name>, n being job.Attempts. StartJob
// counts attempts in the job's row, so no two attempts of a job share n, and no
// attempt ever writes an object another attempt wrote. An attempt that lost its
// lease and still uploads after a newer attempt committed writes keys of its
// own: CompleteJob refuses its rows (the attempt is no longer current), so the
// objects the committed artifact rows name keep the bytes they were recorded
// with. The loser deletes what it wrote (deleteObjects), the attempt that
// commits deletes what earlier ones left (deleteOtherAttempts), and the orphan
// sweep catches what both missed.
func AttemptKey(job *Job, name string) string {
	return artifacts.Key(attemptPrefix(job), name)
}

// attemptPrefix is the folder of AttemptKey, without its final "/".
func attemptPrefix(job *Job) string {
	return artifacts.Key("batches", job.BatchID, "jobs", job.ID, fmt.Sprintf("attempt-%d", job.Attempts))
}

// objectDeleter is an ArtifactStore that can delete objects (artifacts.Store).
type objectDeleter interface {
	Delete(ctx context.Context, key string) error
}

// deleteObjects deletes objects this attempt uploaded that no row names and
// none will: its commit was refused because another attempt owns the job, or
// an upload failed. Their keys are this attempt's own. What it cannot delete
// (storage down) is left to deleteOtherAttempts and the orphan sweep.
func (h *Handler) deleteObjects(ctx context.Context, log *slog.Logger, arts []*Artifact) {
	d, ok := h.Store.(objectDeleter)
	if !ok {
		return
	}
	for _, a := range arts {
		keys := []string{a.ObjectKey}
		if a.Thumbnail != nil {
			keys = append(keys, a.Thumbnail.ObjectKey)
		}
		for _, key := range keys {
			if artifacts.IsContentKey(key) {
				continue // may be shared: the orphan sweep judges it
			}
			if err := d.Delete(ctx, key); err != nil {
				log.Warn("delete an object of a discarded attempt; the orphan sweep will", "key", key, "err", err)
			}
		}
	}
}

// deleteOtherAttempts runs once job's attempt committed: it deletes the
// objects earlier attempts of the job left (a worker killed mid-upload, an
// upload that failed while storage was down). No row names them: the job was
// not final when this attempt started, so no earlier attempt had committed,
// and none can now. Only keys of the attempt-<n> shape are touched (never a
// regression diff stored beside them). A first attempt has none to delete.
func (h *Handler) deleteOtherAttempts(ctx context.Context, log *slog.Logger, job *Job) {
	lister, ok := h.Store.(ObjectLister)
	if !ok || job.Attempts <= 1 {
		return
	}
	own := attemptPrefix(job) + "/"
	prefix := artifacts.Key("batches", job.BatchID, "jobs", job.ID, "attempt-")
	after := ""
	for {
		page, err := lister.List(ctx, prefix, after, artifacts.MaxListPage)
		if err != nil {
			log.Warn("list the objects of earlier attempts; the orphan sweep will delete them", "err", err)
			return
		}
		for _, o := range page {
			if strings.HasPrefix(o.Key, own) {
				continue
			}
			if err := lister.Delete(ctx, o.Key); err != nil {
				log.Warn("delete an object of an earlier attempt; the orphan sweep will", "key", o.Key, "err", err)
			}
		}
		if len(page) < artifacts.MaxListPage {
			return
		}
		after = page[len(page)-1].Key
	}
}

// fail records a failed attempt, with what it found before failing (begin is
// when it started); final marks the job failed and tells the queue not to
// retry. The message is capped: a vendor's error text can be long too.
//
// kept are the uploaded checkpoints of a failed journey (keepCheckpoints),
// stored with the job when the failure is final and deleted otherwise.
func (h *Handler) fail(ctx context.Context, log *slog.Logger, job *Job, begin time.Time, jerr *jobError, final bool, kept ...*Artifact) error {
	if err := h.record(ctx, log, job, begin, jerr, final, kept...); err != nil {
		return err
	}
	if final {
		h.afterFinal(ctx, job)
		return fmt.Errorf("%s: %s: %w", jerr.Code, jerr.Message, ErrNoRetry)
	}
	return fmt.Errorf("%s: %s", jerr.Code, jerr.Message)
}

// record writes a failed attempt down (fail without the queue's answer).
func (h *Handler) record(ctx context.Context, log *slog.Logger, job *Job, begin time.Time, jerr *jobError, final bool, kept ...*Artifact) error {
	jerr.Message = capture.CapMessage(jerr.Message)
	log.Warn("job attempt failed", "code", jerr.Code, "err", jerr.Message, "final", final)
	if jerr.result != nil {
		jerr.result.TimingsMS["total"] = time.Since(begin).Milliseconds()
	}
	// Record the failure even if the task's ctx is done (shutdown,
	// timeout): the row must not stay "running".
	rctx, cancel := Bookkeeping(ctx)
	defer cancel()
	if cf, ok := h.Repo.(CheckpointFailer); ok && final && len(kept) > 0 {
		if err := cf.FailJobWithArtifacts(rctx, job.ID, job.Attempts, jerr.JobError, jerr.result, kept); err != nil {
			h.deleteObjects(rctx, log, kept)
			return fmt.Errorf("record failure of job %s: %w", job.ID, err)
		}
		return nil
	}
	h.deleteObjects(rctx, log, kept) // kept only with a final failure
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

// CheckpointFailer is a Repository that can store artifacts with a failed
// job (store.Store): the checkpoints a suite journey reached before a step
// failed (Options.KeepCheckpoints).
type CheckpointFailer interface {
	// FailJobWithArtifacts is FailJob with final=true that also replaces the
	// job's artifact rows with arts, in the same transaction.
	FailJobWithArtifacts(ctx context.Context, id string, attempt int, e JobError, result *Result, arts []*Artifact) error
}

// run captures the page, gives the host's slot back (releaseHost) and
// uploads the artifacts.
//
// links receives the links a crawl page found (crawlLinks).
func (h *Handler) run(ctx context.Context, job *Job, releaseHost func(), links *[]string) (*Result, []*Artifact, *jobError) {
	// The capture's own budget (timeout_ms) starts when a tab is free; ctx (the
	// task's deadline) bounds the wait for one.
	req := job.Options.CaptureRequest(job.URL, job.Name)
	crawlRequest(job, &req)
	var (
		res *capture.Result
		err error
	)
	if job.Options.AuthProfile != "" {
		var aerr *jobError
		res, err, aerr = h.authCapture(ctx, job, req)
		if aerr != nil {
			releaseHost()
			return nil, nil, aerr
		}
	} else {
		res, err = h.Renderer.Capture(ctx, req)
	}
	releaseHost() // the page work is done; uploads do not touch the host
	if err != nil {
		var ce *capture.Error
		if errors.As(err, &ce) {
			var partial *Result
			var kept []*Artifact
			if ce.Result != nil {
				partial = newResult(ce.Result)
				kept = h.keepCheckpoints(ctx, job, ce.Result)
			}
			return nil, kept, &jobError{JobError{Code: ce.Code, Message: ce.Message}, ce.Retryable, partial}
		}
		if ctx.Err() != nil {
			return nil, nil, &jobError{JobError{Code: capture.CodeNavigationTimeout, Message: "the job was interrupted: " + ctx.Err().Error()}, true, nil}
		}
		return nil, nil, &jobError{JobError{Code: CodeInternal, Message: err.Error()}, true, nil}
	}
	*links = crawlLinks(job, res)
	if name, ok := repeatedName(res); ok {
		return nil, nil, &jobError{JobError{Code: CodeArtifactNameConflict,
			Message: fmt.Sprintf("the capture gave two artifacts the name %q; nothing was stored", name)}, false, nil}
	}
	arts, texts, jerr := h.upload(ctx, job, res)
	if jerr != nil {
		return nil, nil, jerr
	}
	result := newResult(res)
	result.Manifest = manifest(res.Images, arts)
	result.TextChars = texts.textChars
	result.MarkdownChars, result.MarkdownTruncated = texts.mdChars, texts.mdTruncated
	for k, v := range texts.timings {
		result.TimingsMS[k] = v
	}
	return result, arts, nil
}

// putImage stores one image of the capture and returns its artifact.
func (h *Handler) putImage(ctx context.Context, job *Job, img capture.Image) (*Artifact, error) {
	obj, err := h.put(ctx, AttemptKey(job, img.Name), img.Data, img.ContentType, artifacts.PutOptions{})
	if err != nil {
		return nil, err
	}
	a := &Artifact{ID: NewID(), JobID: job.ID, Kind: KindScreenshot, Name: img.Name, Seq: img.Index,
		ObjectKey: obj.Key, ContentType: img.ContentType, Bytes: obj.Bytes, Width: img.Width, Height: img.Height,
		SHA256: obj.SHA256, CRC32: crc32.ChecksumIEEE(img.Data), Reused: obj.Reused}
	if img.RowSigs != nil && len(img.RowSigs) == img.Height && len(img.RowExact) == img.Height {
		a.RowHashes = diff.EncodeRowHashes(img.Width, img.RowSigs, img.RowExact)
	}
	return a, nil
}

// manifest lists the capture's segments with their stored artifacts (one
// per image, in order), or nil when no segment has row hashes.
func manifest(imgs []capture.Image, arts []*Artifact) *Manifest {
	m := &Manifest{Segments: make([]ManifestSegment, 0, len(imgs))}
	hashed := false
	for i, img := range imgs {
		a := arts[i]
		rows := 0
		if a.RowHashes != nil {
			rows, hashed = img.Height, true
		}
		m.Segments = append(m.Segments, ManifestSegment{Seq: a.Seq, Name: a.Name, Y: img.Y, YCSS: img.YCSS,
			Width: img.Width, Height: img.Height, SHA256: a.SHA256, Rows: rows})
	}
	if !hashed {
		return nil
	}
	return m
}

// keepCheckpoints uploads the images a failed capture kept (a suite journey's
// checkpoints before the failed step, capture.Request.KeepCheckpoints), for
// fail to store with the failed job. An image that cannot be uploaded is left
// out: its checkpoint then shows as an error.
func (h *Handler) keepCheckpoints(ctx context.Context, job *Job, res *capture.Result) []*Artifact {
	if !job.Options.KeepCheckpoints || len(res.Images) == 0 {
		return nil
	}
	var out []*Artifact
	for _, img := range res.Images {
		a, err := h.putImage(ctx, job, img)
		if err != nil {
			h.logger().Warn("upload a checkpoint of a failed job", "job_id", job.ID, "name", img.Name, "err", err)
			continue
		}
		out = append(out, a)
	}
	return out
}

// put stores one artifact's bytes: content-addressed when h.Content is set
// (key and opts are then unused: content objects are always served as
// attachments unless a link says otherwise), under key otherwise.
func (h *Handler) put(ctx context.Context, key string, data []byte, contentType string, opts artifacts.PutOptions) (artifacts.Object, error) {
	var obj artifacts.Object
	var err error
	if h.Content != nil {
		obj, err = h.Content.PutContent(ctx, data, contentType)
	} else {
		obj, err = h.Store.Put(ctx, key, data, contentType, opts)
	}
	if err == nil && h.Uploads != nil {
		h.Uploads(obj.Reused, obj.Bytes)
	}
	return obj, err
}

// thumbnail stores the preview of an image (the job's first screenshot) and
// returns it, or nil when the image cannot be previewed or the upload fails:
// lists then show the image itself, which is worth no failed job.
func (h *Handler) thumbnail(ctx context.Context, job *Job, name string, data []byte) *Thumbnail {
	th, err := thumbnail.Make(data)
	if err != nil {
		h.logger().Warn("no thumbnail", "job_id", job.ID, "name", name, "err", err)
		return nil
	}
	obj, err := h.put(ctx, AttemptKey(job, ThumbnailName(name)), th.Data, thumbnail.ContentType, artifacts.PutOptions{})
	if err != nil {
		h.logger().Warn("thumbnail upload failed", "job_id", job.ID, "name", name, "err", err)
		return nil
	}
	return &Thumbnail{ObjectKey: obj.Key, ContentType: thumbnail.ContentType, Bytes: obj.Bytes, Width: th.Width, Height: th.Height,
		Reused: obj.Reused}
}

// ThumbnailName is the file name of an artifact's thumbnail: shot.png's is
// shot.thumb.jpg.
func ThumbnailName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	return name + ".thumb.jpg"
}

// uploadFailed deletes what the attempt uploaded before an upload failed with
// err, unless err is transient: then storage is likely down, deleting would
// only hold the worker, and the retry's commit deletes them (deleteOtherAttempts).
func (h *Handler) uploadFailed(ctx context.Context, job *Job, uploaded []*Artifact, err error) {
	if len(uploaded) == 0 || artifacts.IsTransient(err) {
		return
	}
	ctx, cancel := Bookkeeping(ctx)
	defer cancel()
	h.deleteObjects(ctx, h.logger().With("job_id", job.ID, "attempt", job.Attempts), uploaded)
}

// uploadError is the failure of an artifact's upload: storage_full when the
// storage is out of space, upload_failed otherwise; retried when storage may
// recover (an outage, a full disk) or the task was interrupted.
func uploadError(ctx context.Context, name string, err error) *jobError {
	code := CodeUploadFailed
	if errors.Is(err, artifacts.ErrStorageFull) {
		code = CodeStorageFull
	}
	return &jobError{JobError{Code: code, Message: fmt.Sprintf("upload %s: %v", name, err)},
		artifacts.IsTransient(err) || ctx.Err() != nil, nil}
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
		Elements:        res.BoxTree,
		Partial:         res.Partial,
		ContentType:     res.ContentType,
		PDFPages:        res.PDFPages,
		SkippedOutputs:  res.Skipped,
		Quality:         res.Quality,
		Consent:         res.Consent,
		DeepCapture:     res.DeepCapture,
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

// hostSlot takes a slot of the job's target host before the job starts, so
// a host at its cap costs no attempt: after HostWait the task goes back to
// the queue (ErrHostBusy, which the worker does not count as a failure). On
// the queue's last attempt that hand-back would end the task, so it waits up
// to the job's timeout instead. release is idempotent.
func (h *Handler) hostSlot(ctx context.Context, jobID string, lastAttempt bool) (release func(), err error) {
	noop := func() {}
	if h.Hosts == nil {
		return noop, nil
	}
	job, err := h.Repo.GetJob(ctx, jobID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("job %s: %w", jobID, ErrNoRetry)
	}
	if err != nil {
		return nil, fmt.Errorf("read job %s: %w", jobID, err)
	}
	limit := job.Options.HostConcurrency
	if limit == 0 {
		limit = h.HostConcurrency
	}
	host := TargetHost(job.URL)
	if job.Terminal() || limit <= 0 || host == "" {
		return noop, nil
	}
	wait := h.HostWait
	if wait <= 0 {
		wait = DefaultHostWait
	}
	if lastAttempt {
		wait = max(wait, job.Options.JobTimeout())
	}
	release, ok, err := h.Hosts.Acquire(ctx, host, limit, wait)
	if err != nil {
		// Redis trouble: the task's retry is the queue's, as for any transient error.
		return nil, fmt.Errorf("job %s: %w", jobID, err)
	}
	if !ok {
		h.logger().Debug("host at its cap; task handed back", "job_id", jobID, "host", host, "limit", limit)
		return nil, fmt.Errorf("job %s: %s (%d): %w", jobID, host, limit, ErrHostBusy)
	}
	return release, nil
}
