package regression

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/thumbnail"
)

const (
	// KindDiff is the artifact kind of a diff image.
	KindDiff = "diff"
	// compareGrace is how long a final capture may wait for its comparison
	// before the reconciler enqueues it again.
	compareGrace = 20 * time.Second
)

// CompareQueue carries comparisons (ComparePayload) to workers: a
// duplicate is not an error. queue.AsynqQueue implements it.
type CompareQueue = Submitter

// CompareTasks is what the reconcile step needs of the queue.
// queue.AsynqQueue implements it.
type CompareTasks interface {
	CompareQueue
	// PayloadState reports the asynq state of a payload's task ("" when the
	// queue has none) and its last error.
	PayloadState(ctx context.Context, p jobs.Payload) (state, lastErr string, err error)
}

// BlobStore reads and writes artifact bytes. artifacts.Store implements it.
type BlobStore interface {
	jobs.ArtifactStore
	Get(ctx context.Context, key string) ([]byte, artifacts.Object, error)
}

// Comparer runs regression:compare tasks: it diffs each segment of a run's
// capture with the active baseline of the same target, viewport and segment.
type Comparer struct {
	Repo  CompareStore
	Store BlobStore
	// Content, when set, stores diff images content-addressed (see
	// jobs.Handler.Content): the same diff on every run is stored once.
	Content jobs.ContentStore
	// SkipThumbnails stores no preview of diff images (SNAPQ_THUMBNAILS=false).
	SkipThumbnails bool
	Logger         *slog.Logger
	// RunFinished runs, in order, when a comparison settled its run: the
	// worker announces the run at once (its run.completed webhook). The api's
	// reconciler catches up on whatever a hook missed.
	RunFinished []func(ctx context.Context, run *Run)
	// Decoded, when set, is told how many segment images each aligned
	// comparison decoded (the worker's snapq_compare_decoded_segments_total).
	Decoded func(n int)
	// Rules, when set, gives the suite rules a comparison applies (rules.go).
	// When it is also a VolatilityReader (store.Store), a suite in volatility
	// mode mask learns its masks from it (volatilitymask.go).
	Rules RuleSource
}

// RowHashReader is a CompareStore that keeps the row hashes segments were
// captured with (store.Store): aligned comparisons then match pages by them
// and decode only the segments whose pixels they need.
type RowHashReader interface {
	// RowHashes returns the row hashes blobs (diff.EncodeRowHashes) of the
	// artifacts ids that have them, by artifact id.
	RowHashes(ctx context.Context, ids []string) (map[string][]byte, error)
}

// Run is the asynq handler of KindCompare (see queue.Register).
func (c *Comparer) Run(ctx context.Context, p ComparePayload) error {
	return c.compare(ctx, p)
}

// Compare compares one capture job of a run and records the outcome. Running
// it again for the same job replaces the earlier outcome.
func (c *Comparer) Compare(ctx context.Context, jobID string) error {
	return c.compare(ctx, ComparePayload{JobID: jobID})
}

func (c *Comparer) compare(ctx context.Context, p ComparePayload) error {
	jobID := p.JobID
	run, key, job, err := c.loadCapture(ctx, p)
	if err != nil {
		return err
	}
	log := c.logger().With("run_id", run.ID, "job_id", jobID, "target", key.Target, "viewport", key.Viewport)
	var cs []*Comparison
	var diffs []*jobs.Artifact
	if key.ReferenceJobID != "" {
		// An environment pair: either capture's task compares the pair,
		// recorded under the run's own capture, once both are final.
		var done bool
		if cs, diffs, done, err = c.comparePairOf(ctx, run, key); err != nil {
			return err
		} else if !done {
			log.Info("pair capture final; the other capture's comparison will compare the pair")
			return nil
		}
		jobID = key.JobID
	} else if cs, diffs, err = c.compareWithBaselines(ctx, run, key, job); err != nil {
		return err
	}
	return c.record(ctx, run, key, jobID, cs, diffs, log)
}

// CaptureRunReader is a CompareStore that reads a run (without its counts)
// and a job in one round trip (store.Store): a compare task that carries its
// capture key then costs one read instead of CaptureOf and GetJob.
type CaptureRunReader interface {
	CaptureRun(ctx context.Context, runID, jobID string) (*Run, *jobs.Job, error)
}

// loadCapture loads the run, the capture key and the job of a run's final
// capture job: the key from the payload when it carries one.
func (c *Comparer) loadCapture(ctx context.Context, p ComparePayload) (*Run, CaptureKey, *jobs.Job, error) {
	jobID := p.JobID
	if key, ok := p.key(); ok {
		if rr, ok := c.Repo.(CaptureRunReader); ok {
			run, job, err := rr.CaptureRun(ctx, p.RunID, jobID)
			return checkCapture(run, key, job, jobID, err)
		}
	}
	run, key, err := c.Repo.CaptureOf(ctx, jobID)
	if errors.Is(err, jobs.ErrNotFound) {
		return nil, key, nil, fmt.Errorf("job %s is not a run capture: %w", jobID, jobs.ErrNoRetry)
	}
	if err != nil {
		return nil, key, nil, fmt.Errorf("load capture %s: %w", jobID, err)
	}
	job, err := c.Repo.GetJob(ctx, jobID)
	return checkCapture(run, key, job, jobID, err)
}

// checkCapture passes a loaded capture on when its job is final.
func checkCapture(run *Run, key CaptureKey, job *jobs.Job, jobID string, err error) (*Run, CaptureKey, *jobs.Job, error) {
	if errors.Is(err, jobs.ErrNotFound) {
		return nil, key, nil, fmt.Errorf("job %s or its run is gone: %w", jobID, jobs.ErrNoRetry)
	}
	if err != nil {
		return nil, key, nil, fmt.Errorf("load job %s: %w", jobID, err)
	}
	if !job.Terminal() {
		return nil, key, nil, fmt.Errorf("job %s is %s; compared once final", jobID, job.Status)
	}
	return run, key, job, nil
}

// comparePairOf compares an environment pair (comparePair) with the
// target's own sensitivity and bands (triage.go).
func (c *Comparer) comparePairOf(ctx context.Context, run *Run, key CaptureKey) ([]*Comparison, []*jobs.Artifact, bool, error) {
	trun := run.forTarget(key.Target)
	cs, diffs, done, err := c.comparePair(ctx, trun, key)
	if err != nil || !done {
		return cs, diffs, done, err
	}
	set := trun.Spec.SettingsFor(key.Target)
	for _, cmp := range cs {
		set.applyBands(cmp)
	}
	return cs, diffs, true, nil
}

// compareWithBaselines compares a capture with its active baselines, with
// the target's own sensitivity and bands (triage.go), and remembers the
// approvals the comparisons carry over. A capture that cannot be trusted is
// never compared: noise must not become a failure, nor a baseline.
func (c *Comparer) compareWithBaselines(ctx context.Context, run *Run, key CaptureKey, job *jobs.Job) ([]*Comparison, []*jobs.Artifact, error) {
	bases, err := c.Repo.ActiveBaselines(ctx, run.SuiteID, run.BaselineBranches(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("load baselines: %w", err)
	}
	if q := suspect(job); job.Status == jobs.StatusSucceeded && q != nil {
		msg := "the capture is suspect: " + strings.Join(q.Reasons, ", ")
		return []*Comparison{{Segment: 1, Status: CompareError, Message: msg}}, nil, nil
	}
	trun := run.forTarget(key.Target)
	cs, diffs, err := c.compareCheckpoints(ctx, trun, key, job, bases)
	if err != nil {
		return nil, nil, err
	}
	set := trun.Spec.SettingsFor(key.Target)
	for _, cmp := range cs {
		set.applyBands(cmp)
	}
	if err := c.rememberApprovals(ctx, run, key, cs); err != nil {
		return nil, nil, err
	}
	return cs, diffs, nil
}

// record names a capture's comparisons and records them; when they settled
// the run, the RunFinished hooks run.
func (c *Comparer) record(ctx context.Context, run *Run, key CaptureKey, jobID string, cs []*Comparison, diffs []*jobs.Artifact, log *slog.Logger) error {
	for _, cmp := range cs {
		cmp.ID, cmp.RunID, cmp.JobID, cmp.Target, cmp.Viewport = jobs.NewID(), run.ID, jobID, key.Target, key.Viewport
		if cmp.Threshold == 0 {
			cmp.Threshold = run.Spec.SettingsFor(key.Target).Threshold
		}
	}
	rctx, cancel := jobs.Bookkeeping(ctx)
	defer cancel()
	finished, err := c.Repo.RecordComparisons(rctx, run.ID, jobID, cs, diffs)
	if errors.Is(err, jobs.ErrArtifactNameTaken) {
		return fmt.Errorf("record comparisons: %w: %w", err, jobs.ErrNoRetry) // a retry names it the same
	}
	if err != nil {
		return fmt.Errorf("record comparisons: %w", err)
	}
	log.Info("capture compared", "segments", len(cs), "run_finished", finished)
	if finished {
		for _, hook := range c.RunFinished {
			hook(rctx, run)
		}
	}
	return nil
}

// compareCheckpoints compares each checkpoint of a capture job (checkpoint.go)
// with its baselines, in order. Of a failed job, the checkpoints whose images
// it kept are compared and the others are errors naming the failed step; the
// baselines of a checkpoint the target no longer has are missing.
func (c *Comparer) compareCheckpoints(ctx context.Context, run *Run, key CaptureKey, job *jobs.Job, bases []*Baseline) ([]*Comparison, []*jobs.Artifact, error) {
	succeeded := job.Status == jobs.StatusSucceeded
	var arts []*jobs.Artifact
	if succeeded || job.Options.KeepCheckpoints {
		var err error
		if arts, err = c.Repo.ListArtifacts(ctx, job.ID); err != nil {
			return nil, nil, fmt.Errorf("list artifacts of job %s: %w", job.ID, err)
		}
	}
	shots, taken := checkpointShots(job.Name, arts)
	byCP := map[string][]*Baseline{}
	for _, b := range bases {
		byCP[b.Checkpoint] = append(byCP[b.Checkpoint], b)
	}
	var failed *int
	var failMsg string
	if !succeeded {
		failed, failMsg = failedStep(job)
	}
	var cs []*Comparison
	var diffs []*jobs.Artifact
	listed := map[string]bool{}
	for _, cp := range run.Spec.checkpoints(key.Target, job) {
		listed[cp.name] = true
		got := shots[cp.name]
		sort.Slice(got, func(i, j int) bool { return got[i].Seq < got[j].Seq })
		var out []*Comparison
		switch {
		case !succeeded && (cp.final() || len(got) == 0):
			out = []*Comparison{{Segment: 1, Status: CompareError, Message: failMsg, FailedStep: failed}}
		case len(got) == 0:
			out = []*Comparison{{Segment: 1, Status: CompareError, Message: fmt.Sprintf("the screenshot action %d (%s) took no image", cp.step, cp.name)}}
		default:
			k := &comparison{c: c, ctx: ctx, run: run, target: key.Target, job: job, cp: cp, shots: got, bases: byCP[cp.name], taken: taken}
			var ds []*jobs.Artifact
			out, ds = k.compare()
			diffs = append(diffs, ds...)
		}
		for _, o := range out {
			o.Checkpoint, o.Step = cp.name, cp.stepRef()
		}
		cs = append(cs, out...)
	}
	if succeeded {
		cs = append(cs, goneCheckpoints(byCP, listed)...)
	}
	return cs, diffs, nil
}

// checkpointShots sorts a capture's screenshots by checkpoint, and lists its
// artifact names (taken; a diff image must not reuse one).
func checkpointShots(jobName string, arts []*jobs.Artifact) (map[string][]*jobs.Artifact, map[string]bool) {
	shots := map[string][]*jobs.Artifact{}
	taken := map[string]bool{}
	for _, a := range arts {
		if a.Kind == jobs.KindScreenshot {
			if cp, ok := checkpointOf(jobName, a.Name); ok {
				shots[cp] = append(shots[cp], a)
			}
		}
		if a.Kind != KindDiff {
			taken[a.Name] = true
		}
	}
	return shots, taken
}

// goneCheckpoints are the missing comparisons of the baselines of the
// checkpoints the target no longer lists, by checkpoint and segment.
func goneCheckpoints(byCP map[string][]*Baseline, listed map[string]bool) []*Comparison {
	var gone []*Baseline
	for name, bs := range byCP {
		if !listed[name] {
			gone = append(gone, bs...)
		}
	}
	sort.Slice(gone, func(i, j int) bool {
		if gone[i].Checkpoint != gone[j].Checkpoint {
			return gone[i].Checkpoint < gone[j].Checkpoint
		}
		return gone[i].Segment < gone[j].Segment
	})
	var cs []*Comparison
	for _, b := range gone {
		cs = append(cs, &Comparison{Checkpoint: b.Checkpoint, Segment: b.Segment, Status: CompareMissing, DiffMode: DiffPixel,
			Message: "the target no longer has this checkpoint", BaselineID: b.ID, BaselineArtifact: b.Artifact})
	}
	return cs
}

// rulesVerdict makes every compared segment of cs an error when the rules
// passed their budget (MaxRuleMatches): they were not all applied, so no
// verdict of those segments can be trusted.
func rulesVerdict(cs []*Comparison, rules *ruleSet) []*Comparison {
	if rules == nil || rules.err == nil {
		return cs
	}
	for _, cmp := range cs {
		if cmp.Status == ComparePassed || cmp.Status == CompareFailed {
			cmp.Status, cmp.Message = CompareError, rules.err.Error()
		}
	}
	return cs
}

// diffName names the diff image of a segment: <job>-diff-001.png, or
// <job>-001-diff.png when a screenshot action named "diff" took that name.
// The second form is one no capture artifact can have: after the job's name,
// a page segment is -NNN and an action's image -<letter…>.
func diffName(jobName string, segment int, taken map[string]bool) string {
	name := fmt.Sprintf("%s-diff-%03d.png", jobName, segment)
	if taken[name] {
		name = fmt.Sprintf("%s-%03d-diff.png", jobName, segment)
	}
	return name
}

// checkpointDiffName names the diff image of a screenshot action's segment:
// <job>-<checkpoint>-diff-001.png, which no capture artifact can have (an
// action's name has no hyphen).
func checkpointDiffName(jobName, checkpoint string, segment int) string {
	return fmt.Sprintf("%s-%s-diff-%03d.png", jobName, checkpoint, segment)
}

// diffOne diffs one segment with its baseline, sets the comparison's numbers
// and status, and uploads the diff image, named name, when any pixel differs.
func (c *Comparer) diffOne(ctx context.Context, job *jobs.Job, cmp *Comparison, mask []image.Rectangle, spec SuiteSpec, name string, ex *explain) (*jobs.Artifact, error) {
	cur, err := c.image(ctx, cmp.CurrentArtifact)
	if err != nil {
		return nil, fmt.Errorf("current image: %w", err)
	}
	base, err := c.image(ctx, cmp.BaselineArtifact)
	if err != nil {
		return nil, fmt.Errorf("baseline image: %w", err)
	}
	opts := diffOptions(spec)
	opts.Mask, opts.DiffImage = mask, true
	res, err := diff.Compare(base, cur, opts)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	defer func() { res.Release() }() // the diff image is encoded by then: its memory serves the next segment's
	if ex != nil && res.DiffPixels > 0 && !res.SizeMismatch {
		// Explain the changes (changes.go); what the rules suppress is masked and diffed again.
		var extra []image.Rectangle
		cmp.Changes, extra = ex.explain(res.Diff)
		cmp.MaskedRegions = ex.rules.maskedRegions(cmp.Changes)
		if len(extra) > 0 {
			opts.Mask = append(append([]image.Rectangle(nil), mask...), extra...)
			res.Release()
			if res, err = diff.Compare(base, cur, opts); err != nil {
				return nil, fmt.Errorf("diff: %w", err)
			}
		}
	}
	cmp.DiffPixels, cmp.DiffRatio = int64(res.DiffPixels), res.Ratio
	if res.DiffPixels > 0 {
		cmp.GroupKey = GroupKey(res.Diff, cur, base)
	}
	switch {
	case res.SizeMismatch:
		bb, cb := base.Bounds(), cur.Bounds()
		cmp.Status, cmp.sizeChanged = CompareFailed, true
		cmp.Message = fmt.Sprintf("size changed from %dx%d to %dx%d", bb.Dx(), bb.Dy(), cb.Dx(), cb.Dy())
	case diff.Passes(res, cmp.Threshold):
		cmp.Status = ComparePassed
	default:
		cmp.Status = CompareFailed
		cmp.Message = fmt.Sprintf("%d pixels differ (%.4f%% > %.4f%%)", res.DiffPixels, res.Ratio*100, cmp.Threshold*100)
	}
	if res.DiffPixels == 0 || res.Diff == nil {
		return nil, nil
	}
	return c.uploadDiff(ctx, job, cmp, res.Diff, name)
}

// diffOptions are the pixel diff's options for a suite's spec.
func diffOptions(spec SuiteSpec) diff.Options {
	opts := diff.DefaultOptions()
	opts.ColorMetric = spec.Diff.ColorMetric // the same names as diff's metrics
	opts.Threshold = spec.PixelThreshold
	opts.IncludeAA = spec.IncludeAA
	if spec.PixelThreshold == 0 {
		opts.Threshold = diff.ExactThreshold // the diff package reads 0 as its default
	}
	return opts
}

// uploadDiff stores a segment's diff image and sets it on the comparison.
func (c *Comparer) uploadDiff(ctx context.Context, job *jobs.Job, cmp *Comparison, img *image.NRGBA, name string) (*jobs.Artifact, error) {
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode diff image: %w", err)
	}
	var obj artifacts.Object
	var err error
	if c.Content != nil {
		obj, err = c.Content.PutContent(ctx, buf.Bytes(), "image/png")
	} else {
		obj, err = c.Store.Put(ctx, artifacts.Key("batches", job.BatchID, "jobs", job.ID, name), buf.Bytes(), "image/png", artifacts.PutOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("upload diff image: %w", err)
	}
	b := img.Bounds()
	seq := 1000 + cmp.Segment
	if cmp.Step != nil {
		seq = 2000 + 100*(*cmp.Step) + cmp.Segment // after the final screenshot's
	}
	a := &jobs.Artifact{ID: jobs.NewID(), JobID: job.ID, Kind: KindDiff, Name: name, Seq: seq,
		ObjectKey: obj.Key, ContentType: "image/png", Bytes: obj.Bytes, Width: b.Dx(), Height: b.Dy(), SHA256: obj.SHA256,
		CRC32: crc32.ChecksumIEEE(buf.Bytes()), Reused: obj.Reused}
	if !c.SkipThumbnails {
		a.Thumbnail = c.thumbnail(ctx, job, name, buf.Bytes())
	}
	cmp.DiffArtifact = a
	return a, nil
}

// thumbnail stores the preview of a diff image, or returns nil when it
// cannot (lists then show the diff itself).
func (c *Comparer) thumbnail(ctx context.Context, job *jobs.Job, name string, data []byte) *jobs.Thumbnail {
	th, err := thumbnail.Make(data)
	if err != nil {
		return nil
	}
	var obj artifacts.Object
	if c.Content != nil {
		obj, err = c.Content.PutContent(ctx, th.Data, thumbnail.ContentType)
	} else {
		obj, err = c.Store.Put(ctx, artifacts.Key("batches", job.BatchID, "jobs", job.ID, jobs.ThumbnailName(name)), th.Data,
			thumbnail.ContentType, artifacts.PutOptions{})
	}
	if err != nil {
		c.logger().Warn("diff thumbnail upload failed", "job_id", job.ID, "name", name, "err", err)
		return nil
	}
	return &jobs.Thumbnail{ObjectKey: obj.Key, ContentType: thumbnail.ContentType, Bytes: obj.Bytes, Width: th.Width, Height: th.Height,
		Reused: obj.Reused}
}

// isSegment tells the page's images (name.png, name-001.png) from named
// action screenshots (name-<action name>.png).
func isSegment(jobName, file string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(file, ".png"), jobName)
	if !ok || rest == "" {
		return ok
	}
	return len(rest) == 4 && rest[0] == '-' && strings.Trim(rest[1:], "0123456789") == ""
}

func (c *Comparer) image(ctx context.Context, a *jobs.Artifact) (image.Image, error) {
	if a == nil {
		return nil, errors.New("no image")
	}
	data, _, err := c.Store.Get(ctx, a.ObjectKey)
	if err != nil {
		return nil, err
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", a.Name, err)
	}
	return img, nil
}

// baselineResult is the result of the job that captured a baseline (for its
// mask boxes); nil when it cannot be read. seen caches by job id.
func (c *Comparer) baselineResult(ctx context.Context, b *Baseline, seen map[string]*jobs.Result) *jobs.Result {
	if b == nil || b.Artifact == nil {
		return nil
	}
	id := b.Artifact.JobID
	if r, ok := seen[id]; ok {
		return r
	}
	var res *jobs.Result
	if j, err := c.Repo.GetJob(ctx, id); err == nil {
		res = j.Result
	}
	seen[id] = res
	return res
}

// ignoreRects joins the suite's rectangles and the boxes its selectors had
// in this capture.
func ignoreRects(rects []Rect, res *jobs.Result) []Rect {
	out := append([]Rect(nil), rects...)
	if res != nil {
		for _, b := range res.Masks {
			out = append(out, Rect{X: b.X, Y: b.Y, Width: b.Width, Height: b.Height})
		}
	}
	return out
}

// maskFor turns ignore rectangles in page CSS pixels into rectangles of the
// segment that starts offsetY image pixels down the page.
func maskFor(rects []Rect, scale float64, offsetY int) []image.Rectangle {
	out := make([]image.Rectangle, 0, len(rects))
	for _, r := range rects {
		x0, y0 := int(float64(r.X)*scale), int(float64(r.Y)*scale)-offsetY
		x1, y1 := int(float64(r.X+r.Width)*scale+0.999), int(float64(r.Y+r.Height)*scale+0.999)-offsetY
		if y1 <= 0 {
			continue
		}
		out = append(out, image.Rect(x0, max(y0, 0), x1, y1))
	}
	return out
}

func (c *Comparer) logger() *slog.Logger { return jobs.Log(c.Logger) }

// ReconcileStep is the reconciler's pass for comparisons of final captures
// that have none: one whose task is missing (the worker died between
// finishing the job and enqueuing its comparison) is enqueued; one whose task
// the queue archived (its retries used up) is recorded as an error comparison
// carrying the task's last error, so its run settles instead of staying
// running (enqueuing again would collide with the archived task's id). A task
// the queue still holds is left alone.
func ReconcileStep(repo Uncompared, q CompareTasks) jobs.ReconcileStep {
	return jobs.ReconcileStep{Name: "comparisons", Run: func(ctx context.Context) (int, error) {
		ids, err := repo.UncomparedCaptures(ctx, time.Now().Add(-compareGrace), 1000)
		if err != nil {
			return 0, err
		}
		acted := 0
		var errs []error
		for _, id := range ids {
			state, lastErr, err := q.PayloadState(ctx, ComparePayload{JobID: id})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			switch state {
			case "":
				err = q.Submit(ctx, ComparePayload{JobID: id}, 0)
			case "archived":
				err = compareGaveUp(ctx, repo, id, lastErr)
			default:
				continue
			}
			acted++
			if err != nil {
				errs = append(errs, fmt.Errorf("comparison of job %s: %w", id, err))
			}
		}
		return acted, errors.Join(errs...)
	}}
}

// compareGaveUp records the comparison of a capture whose compare task the
// queue archived as one error, the reason in its message.
func compareGaveUp(ctx context.Context, repo Uncompared, jobID, lastErr string) error {
	run, key, err := repo.CaptureOf(ctx, jobID)
	if errors.Is(err, jobs.ErrNotFound) {
		return nil // no longer a run's capture
	}
	if err != nil {
		return fmt.Errorf("load capture: %w", err)
	}
	msg := "the queue gave up on the comparison"
	if lastErr != "" {
		msg += ": " + lastErr
	}
	cmp := &Comparison{ID: jobs.NewID(), RunID: run.ID, JobID: jobID, Target: key.Target, Viewport: key.Viewport,
		Segment: 1, Status: CompareError, Message: msg, Threshold: run.Spec.Threshold}
	if _, err := repo.RecordComparisons(ctx, run.ID, jobID, []*Comparison{cmp}, nil); err != nil {
		return fmt.Errorf("record comparison: %w", err)
	}
	return nil
}

// CompareWhenFinal is the job handler's after-final hook: when the job is a
// run's capture (as the store told with its final status, or else as
// CaptureOf finds), its comparison is enqueued at once.
func CompareWhenFinal(repo Captures, q CompareQueue, log *slog.Logger) func(ctx context.Context, job *jobs.Job, settled jobs.Settled) {
	log = jobs.Log(log)
	return func(ctx context.Context, job *jobs.Job, settled jobs.Settled) {
		if settled.Known {
			if settled.RunCapture {
				enqueueCompare(ctx, q, compareOf(job.ID, settled.Capture), log)
			}
			return
		}
		run, key, err := repo.CaptureOf(ctx, job.ID)
		if errors.Is(err, jobs.ErrNotFound) {
			return
		} else if err != nil {
			log.Warn("look up run capture; the reconciler will compare it", "job_id", job.ID, "err", err)
			return
		}
		enqueueCompare(ctx, q, compareOf(job.ID, jobs.RunCaptureRef{RunID: run.ID, Target: key.Target, Viewport: key.Viewport,
			JobID: key.JobID, ReferenceJobID: key.ReferenceJobID}), log)
	}
}

// enqueueCompare enqueues the comparison of a run's final capture.
func enqueueCompare(ctx context.Context, q CompareQueue, p ComparePayload, log *slog.Logger) {
	if err := q.Submit(ctx, p, 0); err != nil {
		log.Warn("enqueue comparison; the reconciler will retry", "job_id", p.JobID, "err", err)
	}
}

// suspect is the quality verdict of a finished capture when it is suspect, nil otherwise.
func suspect(job *jobs.Job) *capture.Quality {
	if job.Result == nil || job.Result.Quality == nil || job.Result.Quality.Verdict != capture.VerdictSuspect {
		return nil
	}
	return job.Result.Quality
}
