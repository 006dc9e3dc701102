package jobs

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/snapq/snapq/capture"
)

// JobStatus is where a job is in its life. Its values are part of the public API (JSON)
// and stored as they are (SQL).
type JobStatus string

// Job statuses.
const (
	StatusQueued    JobStatus = "queued"
	StatusRunning   JobStatus = "running"
	StatusSucceeded JobStatus = "succeeded"
	StatusFailed    JobStatus = "failed"
	StatusCanceled  JobStatus = "canceled"
)

// BatchStatus is where a batch is, derived from its job counts. Its values are part of
// the public API.
type BatchStatus string

// Batch statuses.
const (
	BatchQueued    BatchStatus = "queued"
	BatchRunning   BatchStatus = "running"
	BatchCompleted BatchStatus = "completed"
)

// Artifact kinds: KindScreenshot, the name of another output (capture.OutputHTML, …), or
// capture.FileDownload for the body of a download target.
const KindScreenshot = "screenshot"

// Sentinel errors; web maps them to HTTP statuses in one place.
var (
	ErrNotFound = errors.New("not found")
	// ErrConflict means the request clashes with the current state
	// (for example canceling a finished batch).
	ErrConflict = errors.New("conflict")
	// ErrObjectGone refuses a commit that reuses an object being deleted
	// (retention, the orphan sweep): the attempt is retried and stores the
	// bytes again.
	ErrObjectGone = errors.New("a reused object is being deleted")
	// ErrArtifactNameTaken means two artifacts of one job have the same name
	// (the store keeps one per name); retrying the job cannot help.
	ErrArtifactNameTaken = errors.New("artifact name taken")
)

// Counts is the number of jobs of a batch in each status.
type Counts struct {
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
}

// Unfinished is the number of jobs that have not reached a final status.
func (c Counts) Unfinished() int { return c.Queued + c.Running }

// Batch is a set of jobs submitted together.
type Batch struct {
	ID         string
	OwnerKeyID string // the API key that created it; "" when created with SNAPQ_AUTH=off
	// IdempotencyKey and RequestHash are set on creation when the client sent an
	// Idempotency-Key; they are not read back.
	IdempotencyKey string
	RequestHash    string
	Labels         map[string]string
	Options        json.RawMessage // batch-level options as submitted
	// JobOptions, set on creation, are the resolved options the batch's jobs share (the
	// batch's options over the defaults): the store keeps them once and, per job, only how
	// the job's Options differ (OptionsOverride). Nil: the store picks the first job's.
	// They are not read back.
	JobOptions *Options
	Total      int
	Counts     Counts
	CreatedAt  time.Time
	FinishedAt *time.Time
	// Webhook is set on creation when the batch has one; it is not read back
	// (see webhook.DeliveryStore.GetBatchWebhook).
	Webhook *Webhook
	// Crawl is set for a crawl batch (crawl.go): its jobs are added as its pages find links.
	Crawl *Crawl
	// Interactive is set on creation for a synchronous capture (capture.go): its jobs ride
	// the interactive lane. It is not read back.
	Interactive bool
	// CrawlSkipped counts the pages a crawl batch found but did not add because it was
	// full (max_pages) or its owner at the in-flight cap, each URL once (at most
	// MaxCrawlSkipped); read back only.
	CrawlSkipped int
}

// Status derives the batch status from its counts.
func (b *Batch) Status() BatchStatus {
	switch {
	case b.Counts.Unfinished() == 0:
		return BatchCompleted
	case b.Counts.Queued == b.Total:
		return BatchQueued
	default:
		return BatchRunning
	}
}

// Job is one target of a batch.
type Job struct {
	ID           string
	BatchID      string
	Seq          int
	URL          string
	Name         string
	Options      Options // resolved: batch options, target overrides, defaults
	Status       JobStatus
	Attempts     int
	ErrorCode    string
	ErrorMessage string
	Result       *Result
	CreatedAt    time.Time
	UpdatedAt    time.Time
	StartedAt    *time.Time
	FinishedAt   *time.Time
	// Crawl is the job's place in its crawl batch; nil outside crawl batches.
	Crawl *CrawlPos
}

// Terminal reports whether the job has reached a final status.
func (j *Job) Terminal() bool { return j.Status.Final() }

// Final reports whether s is a final status: succeeded, failed or canceled.
func (s JobStatus) Final() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCanceled
}

// Result is what a successful capture reports; it is stored as JSON.
type Result struct {
	HTTPStatus int           `json:"http_status"`
	FinalURL   string        `json:"final_url"`
	Title      string        `json:"title"`
	PageHeight int           `json:"page_height"`
	Segments   SegmentCounts `json:"segments"`
	// BlockedRequests counts sub-resources the egress guard refused.
	BlockedRequests int `json:"blocked_requests"`
	// Blocking counts the requests and elements the filter lists blocked, by
	// category (block.ads, block.trackers, block.chat_widgets, block.social,
	// block.cookie_banners).
	Blocking   *capture.Blocking `json:"blocking,omitempty"`
	WaitErrors []string          `json:"wait_errors,omitempty"`
	// TextChars is the character count of the text output (absent without one).
	TextChars int `json:"text_chars,omitempty"`
	// MarkdownChars is the character count of the markdown output, MarkdownTruncated whether
	// it was cut at markdown_max_chars (both absent without one).
	MarkdownChars     int              `json:"markdown_chars,omitempty"`
	MarkdownTruncated bool             `json:"markdown_truncated,omitempty"`
	TimingsMS         map[string]int64 `json:"timings_ms"`
	// ScreenshotCalls is capture.Result.ScreenshotCalls: not stored, only observed as the
	// worker's capture_band stage (Handler.Stage), once per call.
	ScreenshotCalls []time.Duration `json:"-"`
	// Log has one entry per step performed on the page (preparation, actions); LogTruncated
	// says older entries were dropped past capture.MaxLogEntries.
	Log          []capture.LogEntry `json:"log,omitempty"`
	LogTruncated bool               `json:"log_truncated,omitempty"`
	// Evaluations are the values of evaluate actions.
	Evaluations []capture.Evaluation `json:"evaluations,omitempty"`
	// Stabilization says how many captures a regression capture took to settle.
	Stabilization *capture.Stabilization `json:"stabilization,omitempty"`
	// Masks are the boxes of the suite's ignore selectors, left out of comparisons.
	Masks []capture.Box `json:"masks,omitempty"`
	// Elements is the page's box tree of a suite's capture (capture/boxtree.go),
	// kept for the comparison's attribution; job responses leave it out.
	Elements *capture.BoxTree `json:"elements,omitempty"`
	// Partial says timeout_ms ran out before the page was ready (load, network idle, a wait
	// or the actions): the outputs show what had rendered by then; wait_errors says where.
	Partial bool `json:"partial,omitempty"`
	// ContentType is the media type of the target's response ("application/pdf" for a PDF
	// target); PDFPages the page count of a PDF target.
	ContentType string `json:"content_type,omitempty"`
	PDFPages    int    `json:"pdf_pages,omitempty"`
	// SkippedOutputs are asked-for outputs the target cannot give (a PDF or a download has
	// no screenshot, html or links), each with the reason.
	SkippedOutputs []capture.Skipped `json:"skipped_outputs,omitempty"`
	// CachedFrom is the id of the job whose capture this job reused instead
	// of rendering (options.max_age_s, cache.go); absent for a rendered job.
	CachedFrom string `json:"cached_from,omitempty"`
	// Quality is the verdict on how far the capture can be trusted (ok or
	// suspect, with reasons); absent in jobs finished before it existed.
	Quality *capture.Quality `json:"quality,omitempty"`
	// Consent lists the consent banners prepare.consent found and what it did.
	Consent []capture.ConsentFound `json:"consent,omitempty"`
	// DeepCapture is what prepare.deep_capture's walk did: items merged, scroll steps,
	// bytes, why it stopped and whether at a bound.
	DeepCapture *capture.DeepCaptureReport `json:"deep_capture,omitempty"`
	// Manifest describes the segments of a PNG segments capture, for aligned
	// comparisons; absent for other captures and in jobs finished before it
	// existed.
	Manifest *Manifest `json:"manifest,omitempty"`
}

// Manifest lists a capture's segments: where each is in the page and what
// its bytes are. Each segment's row hashes (diff.EncodeRowHashes: 16 bytes
// a row) are stored with its artifact row (Artifact.RowHashes), not here:
// a 100,000 px page has 1.6 MB of them.
type Manifest struct {
	Segments []ManifestSegment `json:"segments"`
}

// ManifestSegment is one segment of a Manifest.
type ManifestSegment struct {
	// Seq and Name are the segment's artifact's.
	Seq  int    `json:"seq"`
	Name string `json:"name"`
	// Y is the segment's first row in the page in device px, YCSS in CSS px.
	Y    int `json:"y"`
	YCSS int `json:"y_css"`
	// Width and Height are its size in device px.
	Width  int `json:"width"`
	Height int `json:"height"`
	// SHA256 is the hex SHA-256 of the segment's PNG bytes.
	SHA256 string `json:"sha256"`
	// Rows counts the row hashes recorded (its height; 0: none).
	Rows int `json:"rows"`
}

// SegmentCounts says how many pieces a page needed and how many were kept.
type SegmentCounts struct {
	Total     int  `json:"total"`
	Captured  int  `json:"captured"`
	Truncated bool `json:"truncated"`
}

// Artifact is one stored object produced by a job.
type Artifact struct {
	ID          string
	JobID       string
	Kind        string
	Name        string
	Seq         int
	ObjectKey   string
	ContentType string
	Bytes       int64
	Width       int
	Height      int
	SHA256      string
	// CRC32 is the IEEE CRC-32 of the bytes (what a ZIP header names); 0 for
	// artifacts stored before it was recorded.
	CRC32     uint32
	CreatedAt time.Time
	// RowHashes is a segment's row hashes blob (diff.EncodeRowHashes),
	// recorded at capture; nil for other artifacts and older segments.
	RowHashes []byte
	// Thumbnail is the artifact's small preview, or nil (a job's first
	// screenshot and a comparison's diff have one).
	Thumbnail *Thumbnail
	// Reused: the object was stored before this attempt (a cache hit's
	// copy, content-addressed bytes found already stored), not uploaded by
	// it; a commit refuses a reused object being deleted (ErrObjectGone).
	Reused bool
}

// Thumbnail is a stored preview of an image artifact (the thumbnail package).
type Thumbnail struct {
	ObjectKey   string
	ContentType string
	Bytes       int64
	Width       int
	Height      int
	Reused      bool // as Artifact.Reused
}

// JobRef identifies an unfinished job for the reconciler.
type JobRef struct {
	ID        string
	Status    JobStatus
	UpdatedAt time.Time
}

// JobArtifact is an artifact with the job that made it (an archive's entry).
type JobArtifact struct {
	Artifact
	JobSeq  int
	JobName string
	JobURL  string
}

// StorageStats are the storage figures of the api's /metrics.
type StorageStats struct {
	// BytesByKind is the bytes artifact rows list, by kind (screenshot, html,
	// diff, …, and thumbnail), counting a shared object once per row.
	BytesByKind map[string]int64
	// Objects and Bytes are the distinct objects rows name, and their bytes,
	// each counted once: what the bucket holds for them.
	Objects, Bytes int64
}
