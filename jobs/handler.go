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
	"github.com/snapq/snapq/hotcopy"
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
	// run capture's comparison), from what the store reported with the
	// status (settled) when it is Known. A hook's failure is its own to log;
	// the api's reconciler catches up on whatever a hook missed.
	AfterFinal []func(ctx context.Context, job *Job, settled Settled)
	// Hosts, when set, caps the captures of one target host running at once
	// across workers (hostcap.go): a job's host_concurrency, or
	// HostConcurrency (0: no cap) for jobs without one.
	Hosts           HostSlots
	HostConcurrency int
	// HostWait is how long a job waits for its host's slot before its task
	// goes back to the queue (default DefaultHostWait).
	HostWait time.Duration
	// InteractiveHostHeadroom is how many captures of a host an interactive
	// job (capture.Interactive: somebody waits for it) may run above the host's
	// cap, so a synchronous call does not wait for a batch page of the same host
	// to finish (SNAPQ_INTERACTIVE_HOST_HEADROOM, default
	// DefaultInteractiveHostHeadroom; 0: the cap is strict for it too). Batch
	// jobs never take those slots.
	InteractiveHostHeadroom int
	// Auth logs in the jobs that name an auth profile (auth.go); nil: such
	// jobs fail with auth_failed.
	Auth Authenticator
	// Cache, when set, lets jobs with options.max_age_s reuse a recent
	// capture instead of rendering (cache.go).
	Cache ResultCache
	// MaxInFlight caps an owner's unfinished jobs when a crawl page adds
	// jobs to its batch (SNAPQ_MAX_JOBS_IN_FLIGHT; 0: no cap).
	MaxInFlight int
	// Copies, when set, keeps the bytes of an interactive job's artifacts
	// (capture.Interactive) beside the bucket for the api's answer to its
	// waiting caller (hotcopy.Store).
	Copies ArtifactCopies
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
	return h.process(ctx, p, LastAttempt(ctx))
}

// Process runs one attempt of a job. lastAttempt says whether the queue will
// retry a transient failure.
func (h *Handler) Process(ctx context.Context, jobID string, lastAttempt bool) error {
	return h.process(ctx, CapturePayload{JobID: jobID}, lastAttempt)
}

// attempt is one attempt of a job in this worker, from its start to its
// outcome.
type attempt struct {
	job   *Job
	log   *slog.Logger
	begin time.Time
	// last: the queue will not retry a transient failure.
	last bool
	// releaseHost gives the host's slot back (idempotent).
	releaseHost func()
	// cached: the outputs were reused from the result cache (cache.go).
	cached bool
	// links are the links a crawl page found (crawl.go).
	links []string
	// preview is the image an interactive capture previews after its answer
	// (thumbnailAfter), with the artifact that stores it; nil otherwise.
	preview *laterThumbnail
}

// process runs one attempt of the job of p: the host's slot, the start, the
// outputs, the outcome.
func (h *Handler) process(ctx context.Context, p CapturePayload, lastAttempt bool) error {
	entered := time.Now()
	release, err := h.hostSlot(ctx, p, lastAttempt)
	if err != nil {
		return err
	}
	defer release()
	a, err := h.start(ctx, p.JobID, lastAttempt, release)
	if a == nil {
		return err
	}
	result, arts, jerr := h.produce(ctx, a)
	if jerr != nil {
		return h.failed(ctx, a, jerr, arts)
	}
	if !a.cached {
		h.startStages(result, a.job, entered, a.begin)
	}
	return h.succeed(ctx, a, result, arts)
}

// start starts the job's attempt; nil without an error when the job is
// already final (a duplicate delivery, or canceled).
func (h *Handler) start(ctx context.Context, jobID string, lastAttempt bool, releaseHost func()) (*attempt, error) {
	job, started, err := h.Repo.StartJob(ctx, jobID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("job %s: %w", jobID, ErrNoRetry)
	}
	if err != nil {
		return nil, fmt.Errorf("start job %s: %w", jobID, err)
	}
	if !started {
		return nil, nil
	}
	log := h.logger().With("job_id", job.ID, "batch_id", job.BatchID, "url", job.URL, "attempt", job.Attempts)
	return &attempt{job: job, log: log, begin: time.Now(), last: lastAttempt, releaseHost: releaseHost}, nil
}

// produce makes the attempt's outputs: reused from the result cache, or
// rendered and uploaded (run). A failed attempt may return the checkpoints
// it kept.
func (h *Handler) produce(ctx context.Context, a *attempt) (*Result, []*Artifact, *jobError) {
	var result *Result
	var arts []*Artifact
	var jerr *jobError
	if a.job.Crawl == nil { // a crawl page's links come from its own load
		result, arts = h.fromCache(ctx, a.job)
	}
	if a.cached = result != nil; a.cached {
		a.releaseHost()
		a.log.Info("capture reused from the result cache", "cached_from", result.CachedFrom)
	} else {
		result, arts, jerr = h.run(ctx, a)
	}
	if h.Captured != nil && jerr == nil {
		h.Captured(a.cached)
	}
	return result, arts, jerr
}

// failed settles a failed attempt: back to the queue without a failure
// counted when no browser could take it, otherwise a failure, final on the
// queue's last attempt or when retrying cannot help.
func (h *Handler) failed(ctx context.Context, a *attempt, jerr *jobError, kept []*Artifact) error {
	if jerr.Code == capture.CodeBrowserUnavailable && !a.last {
		// The queue retries it without counting a failure (ErrBrowserUnavailable).
		if _, err := h.record(ctx, a, jerr, false); err != nil {
			return err
		}
		return fmt.Errorf("job %s: %s: %w", a.job.ID, jerr.Message, ErrBrowserUnavailable)
	}
	// A canceled task context (not its deadline) is the worker handing the
	// task back to the queue as it stops: whatever the capture made of the
	// interruption, the job is not done with.
	interrupted := errors.Is(ctx.Err(), context.Canceled)
	return h.fail(ctx, a, jerr, (a.last || !jerr.retryable) && !interrupted, kept...)
}

// succeed commits a finished attempt's result and artifacts, then runs the
// after-final hooks.
func (h *Handler) succeed(ctx context.Context, a *attempt, result *Result, arts []*Artifact) error {
	result.TimingsMS["total"] = time.Since(a.begin).Milliseconds()
	cctx, cancel := Bookkeeping(ctx)
	defer cancel()
	commit := time.Now()
	settled, err := h.commit(cctx, a, result, arts)
	if errors.Is(err, ErrArtifactNameTaken) {
		// run checks the names; this is the store's word for a clash it missed.
		if !a.cached { // a hit's objects are its source's
			h.deleteObjects(cctx, a.log, arts)
		}
		return h.fail(ctx, a, &jobError{JobError{Code: CodeArtifactNameConflict, Message: err.Error()}, false, nil}, true)
	}
	if err != nil {
		return fmt.Errorf("complete job %s: %w", a.job.ID, err)
	}
	if !settled.Current {
		a.log.Warn("job was taken over by another attempt; result discarded")
		if !a.cached {
			h.deleteObjects(cctx, a.log, arts)
		}
		return nil
	}
	h.observe(StageCommit, commit)
	h.deleteOtherAttempts(cctx, a.log, a.job)
	final := time.Now()
	h.afterFinal(ctx, a.job, settled)
	h.observe(StageEvents, final)
	h.thumbnailAfter(cctx, a)
	a.log.Info("job succeeded", "http_status", result.HTTPStatus, "artifacts", len(arts), "partial", result.Partial,
		"segments", result.Segments.Captured, "ms", result.TimingsMS["total"])
	return nil
}

// commit writes the attempt's success: a crawl page's with the pages its
// links add to the batch (crawl.go).
func (h *Handler) commit(ctx context.Context, a *attempt, result *Result, arts []*Artifact) (Settled, error) {
	cs, crawls := h.Repo.(CrawlStore)
	if !crawls || a.job.Crawl == nil {
		return h.Repo.CompleteAttempt(ctx, a.job.ID, a.job.Attempts, result, arts)
	}
	settled, added, err := cs.CompleteCrawlJob(ctx, a.job, result, arts, a.links, h.MaxInFlight)
	if settled.Current {
		a.log.Info("crawl page done", "depth", a.job.Crawl.Depth, "links", len(a.links), "added", added)
	}
	return settled, err
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

// fail records a failed attempt, with what it found before failing; final
// marks the job failed and tells the queue not to retry. The message is
// capped: a vendor's error text can be long too.
//
// kept are the uploaded checkpoints of a failed journey (keepCheckpoints),
// stored with the job when the failure is final and deleted otherwise.
func (h *Handler) fail(ctx context.Context, a *attempt, jerr *jobError, final bool, kept ...*Artifact) error {
	settled, err := h.record(ctx, a, jerr, final, kept...)
	if err != nil {
		return err
	}
	if final {
		if settled.Current {
			h.afterFinal(ctx, a.job, settled)
		}
		return fmt.Errorf("%s: %s: %w", jerr.Code, jerr.Message, ErrNoRetry)
	}
	return fmt.Errorf("%s: %s", jerr.Code, jerr.Message)
}

// record writes a failed attempt down (fail without the queue's answer).
func (h *Handler) record(ctx context.Context, a *attempt, jerr *jobError, final bool, kept ...*Artifact) (Settled, error) {
	jerr.Message = capture.CapMessage(jerr.Message)
	a.log.Warn("job attempt failed", "code", jerr.Code, "err", jerr.Message, "final", final)
	if jerr.result != nil {
		jerr.result.TimingsMS["total"] = time.Since(a.begin).Milliseconds()
	}
	// Record the failure even if the task's ctx is done (shutdown,
	// timeout): the row must not stay "running".
	rctx, cancel := Bookkeeping(ctx)
	defer cancel()
	var store []*Artifact // nil: the job's artifact rows stay as they are
	if final && len(kept) > 0 {
		store = kept
	} else {
		h.deleteObjects(rctx, a.log, kept) // kept only with a final failure
	}
	settled, err := h.Repo.FailAttempt(rctx, a.job.ID, a.job.Attempts, jerr.JobError, jerr.result, final, store)
	if err != nil {
		h.deleteObjects(rctx, a.log, store)
		return settled, fmt.Errorf("record failure of job %s: %w", a.job.ID, err)
	}
	return settled, nil
}

// afterFinal runs the AfterFinal hooks with what the store reported with
// the job's final status; they get a bookkeeping context so a shutdown does
// not skip them.
func (h *Handler) afterFinal(ctx context.Context, job *Job, settled Settled) {
	ctx, cancel := Bookkeeping(ctx)
	defer cancel()
	for _, hook := range h.AfterFinal {
		hook(ctx, job, settled)
	}
}

type jobError struct {
	JobError
	retryable bool
	// result is what a failed capture found (capture.Error.Result), or nil:
	// a failure after the capture (an upload) stores no result.
	result *Result
}

// run captures the page, gives the host's slot back and uploads the
// artifacts; a crawl page's links go to a.links (crawlLinks).
func (h *Handler) run(ctx context.Context, a *attempt) (*Result, []*Artifact, *jobError) {
	res, kept, jerr := h.render(ctx, a)
	if jerr != nil {
		return nil, kept, jerr
	}
	a.links = crawlLinks(a.job, res)
	if name, ok := repeatedName(res); ok {
		return nil, nil, &jobError{JobError{Code: CodeArtifactNameConflict,
			Message: fmt.Sprintf("the capture gave two artifacts the name %q; nothing was stored", name)}, false, nil}
	}
	arts, up, jerr := h.upload(ctx, a.job, res)
	if jerr != nil {
		return nil, nil, jerr
	}
	if h.previewLater(ctx) && len(res.Images) > 0 {
		a.preview = &laterThumbnail{artifact: arts[0], img: res.Images[0]}
	}
	h.keepCopies(ctx, res, arts)
	result := newResult(res)
	result.Manifest = manifest(res.Images, arts)
	result.TextChars = up.textChars
	result.MarkdownChars, result.MarkdownTruncated = up.mdChars, up.mdTruncated
	for k, v := range up.timings {
		result.TimingsMS[k] = v
	}
	return result, arts, nil
}

// render loads and captures the page and gives the host's slot back:
// uploads do not touch the host. A failed capture returns the checkpoints it
// kept, uploaded.
func (h *Handler) render(ctx context.Context, a *attempt) (*capture.Result, []*Artifact, *jobError) {
	res, err, aerr := h.capturePage(ctx, a.job)
	a.releaseHost()
	if aerr != nil {
		return nil, nil, aerr
	}
	if err == nil {
		return res, nil, nil
	}
	var ce *capture.Error
	if errors.As(err, &ce) {
		var partial *Result
		var kept []*Artifact
		if ce.Result != nil {
			partial = newResult(ce.Result)
			kept = h.keepCheckpoints(ctx, a.job, ce.Result)
		}
		return nil, kept, &jobError{JobError{Code: ce.Code, Message: ce.Message}, ce.Retryable, partial}
	}
	if ctx.Err() != nil {
		return nil, nil, &jobError{JobError{Code: capture.CodeNavigationTimeout, Message: "the job was interrupted: " + ctx.Err().Error()}, true, nil}
	}
	return nil, nil, &jobError{JobError{Code: CodeInternal, Message: err.Error()}, true, nil}
}

// capturePage runs the job's capture, logged in first when the job names an
// auth profile (aerr: the login failed). The capture's own budget
// (timeout_ms) starts when a tab is free; ctx (the task's deadline) bounds
// the wait for one.
func (h *Handler) capturePage(ctx context.Context, job *Job) (res *capture.Result, err error, aerr *jobError) {
	req := job.Options.CaptureRequest(job.URL, job.Name)
	crawlRequest(job, &req)
	if job.Options.AuthProfile != "" {
		return h.authCapture(ctx, job, req)
	}
	res, err = h.Renderer.Capture(ctx, req)
	return res, err, nil
}

// ArtifactCopies keeps short-lived copies of artifact bytes by object key.
// hotcopy.Store implements it.
type ArtifactCopies interface {
	Keep(ctx context.Context, objs []hotcopy.Object) error
}

// keepCopies copies the stored artifacts of an interactive capture (its
// images, then its files: the order of arts) for the waiting caller's
// answer, before the job completes. A failed copy is logged: the answer
// then reads the bucket.
func (h *Handler) keepCopies(ctx context.Context, res *capture.Result, arts []*Artifact) {
	if h.Copies == nil || !capture.Interactive(ctx) {
		return
	}
	objs := make([]hotcopy.Object, 0, len(arts))
	for i, img := range res.Images {
		objs = append(objs, hotcopy.Object{Key: arts[i].ObjectKey, Data: img.Data})
	}
	for i, f := range res.Files {
		objs = append(objs, hotcopy.Object{Key: arts[len(res.Images)+i].ObjectKey, Data: f.Data})
	}
	if err := h.Copies.Keep(ctx, objs); err != nil {
		h.logger().Warn("keep the artifacts' copies; the answer reads the bucket", "err", err)
	}
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
func (h *Handler) thumbnail(ctx context.Context, job *Job, img capture.Image) *Thumbnail {
	name := img.Name
	th, err := makeThumbnail(img)
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

// makeThumbnail encodes the preview the capture made from the pixels it had
// in hand (capture.Image.Preview), or decodes the image to make one.
func makeThumbnail(img capture.Image) (*thumbnail.Thumbnail, error) {
	if img.Preview != nil {
		return thumbnail.FromImage(img.Preview)
	}
	return thumbnail.Make(img.Data)
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
		Blocking:        res.Blocking,
		TimingsMS:       timings,
		ScreenshotCalls: res.ScreenshotCalls,
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
// to the job's timeout instead, as an interactive job (capture.Interactive)
// always does, first in line (FirstHostSlots) and with InteractiveHostHeadroom
// slots above the cap that only such jobs take. The host, cap and timeout
// come with the task (CaptureTask); a payload without them makes it read the
// job. release is idempotent.
func (h *Handler) hostSlot(ctx context.Context, p CapturePayload, lastAttempt bool) (release func(), err error) {
	noop := func() {}
	if h.Hosts == nil {
		return noop, nil
	}
	if p.Host == "" {
		if p, err = h.payloadOf(ctx, p.JobID); err != nil || p.Host == "" {
			return noop, err
		}
	}
	limit := p.HostConcurrency
	if limit == 0 {
		limit = h.HostConcurrency
	}
	if limit <= 0 {
		return noop, nil
	}
	wait := h.HostWait
	if wait <= 0 {
		wait = DefaultHostWait
	}
	acquire := h.Hosts.Acquire
	if fh, ok := h.Hosts.(FirstHostSlots); ok && capture.Interactive(ctx) {
		// Somebody waits for it: first in line for the host's next slot,
		// and not handed back (a requeue costs its caller HostBusyDelay).
		acquire, lastAttempt = fh.AcquireFirst, true
		limit += h.InteractiveHostHeadroom
	}
	if lastAttempt {
		wait = max(wait, p.Timeout())
	}
	release, ok, err := acquire(ctx, p.Host, limit, wait)
	if err != nil {
		// Redis trouble: the task's retry is the queue's, as for any transient error.
		return nil, fmt.Errorf("job %s: %w", p.JobID, err)
	}
	if !ok {
		h.logger().Debug("host at its cap; task handed back", "job_id", p.JobID, "host", p.Host, "limit", limit)
		return nil, fmt.Errorf("job %s: %s (%d): %w", p.JobID, p.Host, limit, ErrHostBusy)
	}
	return release, nil
}

// payloadOf reads job id for what its task's payload did not carry; a final
// job needs no host slot (an empty Host).
func (h *Handler) payloadOf(ctx context.Context, id string) (CapturePayload, error) {
	job, err := h.Repo.GetJob(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return CapturePayload{}, fmt.Errorf("job %s: %w", id, ErrNoRetry)
	}
	if err != nil {
		return CapturePayload{}, fmt.Errorf("read job %s: %w", id, err)
	}
	if job.Terminal() {
		return CapturePayload{JobID: id}, nil
	}
	return CaptureTask(id, job.URL, job.Options), nil
}
