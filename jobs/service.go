package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// Service is what the API does with batches: accept, read, cancel.
type Service struct {
	Repo   BatchStore
	Queue  Queue
	Logger *slog.Logger
	// MaxInFlight caps an API key's queued and running jobs (0: no cap). With
	// a Repo that is an InFlightLimiter (store.Store) the count and the write
	// are one step per key, so concurrent submissions cannot overshoot it;
	// otherwise it is checked before the batch is written.
	MaxInFlight int
	// MaxTargets caps the targets of one batch (default MaxTargets).
	MaxTargets int
	// Dispatch, when set, is kicked after a batch is written: its jobs are
	// stored held and the Dispatcher enqueues them in fair turns. Without
	// it (tests, tools) every job is enqueued at once, FIFO.
	Dispatch Kicker
	// MaxHostConcurrency caps the host_concurrency option
	// (SNAPQ_HOST_CONCURRENCY_MAX; 0: DefaultHostConcurrencyMax).
	MaxHostConcurrency int
	// Sitemaps reads the sitemap of a batch that names one (nil: such a batch is refused).
	Sitemaps SitemapPages
	// Budget admits the sitemap read of a batch (WorkDiscover) per key before it starts;
	// nil: no cap.
	Budget WorkBudget
}

// DefaultMaxInFlight is the api's default MaxInFlight (SNAPQ_MAX_JOBS_IN_FLIGHT).
const DefaultMaxInFlight = 10_000

// InFlightLimiter is a BatchStore that enforces an in-flight cap in the
// transaction that writes a batch. store.Store implements it; Submit uses it
// when Repo does.
type InFlightLimiter interface {
	// CreateBatchLimited is CreateBatch, except that it first counts the
	// unfinished jobs of b's owner under a lock held per owner until the
	// batch is committed; if they and jobs would exceed maxInFlight it writes
	// nothing and returns TooManyInFlight. No cap when maxInFlight <= 0 or b
	// has no owner.
	CreateBatchLimited(ctx context.Context, b *Batch, jobs []*Job, maxInFlight int) error
}

// TooManyInFlight is the refusal of add new jobs for an owner that has
// unfinished ones under limit; it wraps ErrTooManyInFlight.
func TooManyInFlight(unfinished, add, limit int) error {
	return fmt.Errorf("%w: %d unfinished and %d new, the limit is %d", ErrTooManyInFlight, unfinished, add, limit)
}

// Submission is one POST /v1/batches.
type Submission struct {
	Body           []byte
	Owner          string // API key id, "" without auth
	IdempotencyKey string // optional
	// Interactive puts the batch's jobs on the interactive lane (SubmitCapture).
	Interactive bool
}

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// Submit validates a batch body, stores the batch and its jobs in one
// transaction, then kicks the Dispatcher (or, without one, enqueues one task
// per job). A failed enqueue is logged, not returned: the job is stored as
// queued and the dispatcher or the reconciler enqueues it.
// With an Idempotency-Key, a repeat of an earlier request returns the
// earlier batch (replayed=true) and a different body is ErrIdempotencyConflict.
func (s *Service) Submit(ctx context.Context, sub Submission) (b *Batch, jobs []*Job, replayed bool, err error) {
	sum := sha256.Sum256(sub.Body)
	hash := hex.EncodeToString(sum[:])
	if sub.IdempotencyKey != "" {
		if b, jobs, err := s.replay(ctx, sub, hash); !errors.Is(err, ErrNotFound) {
			return b, jobs, err == nil, err
		}
	}
	newJobs, req, crawl, err := s.parse(ctx, sub)
	if err != nil {
		return nil, nil, false, err
	}
	limiter, atomic := s.Repo.(InFlightLimiter)
	if !atomic {
		if err := CheckInFlight(ctx, s.Repo, sub.Owner, len(newJobs), s.MaxInFlight); err != nil {
			return nil, nil, false, err
		}
	}
	b, jobs = newBatch(sub, hash, req, crawl, newJobs)
	create := s.Repo.CreateBatch
	if atomic {
		create = func(ctx context.Context, b *Batch, jobs []*Job) error {
			return limiter.CreateBatchLimited(ctx, b, jobs, s.MaxInFlight)
		}
	}
	if err := create(ctx, b, jobs); errors.Is(err, ErrIdempotencyTaken) {
		// A concurrent request with the same key won the race.
		b, jobs, err := s.replay(ctx, sub, hash)
		return b, jobs, err == nil, err
	} else if errors.Is(err, ErrTooManyInFlight) {
		return nil, nil, false, err
	} else if err != nil {
		return nil, nil, false, fmt.Errorf("store batch: %w", err)
	}
	b.Counts.Queued = len(jobs)
	// The batch is committed: from here on, it must not fail the request.
	if !sub.Interactive || !KickLane(s.Dispatch) {
		EnqueueOrKick(ctx, s.Dispatch, s.Queue, jobs, s.logger())
	}
	return b, jobs, false, nil
}

// parse decodes the batch body once, expands a crawl's start or a sitemap's
// pages into its urls, and validates it.
func (s *Service) parse(ctx context.Context, sub Submission) ([]NewJob, *BatchRequest, *Crawl, error) {
	req := &BatchRequest{}
	var errs FieldErrors
	ok := DecodeStrict(sub.Body, req, "", &errs)
	crawl, err := s.expandCrawl(req, errs, ok)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := s.expandSitemap(ctx, req, ok, sub.Owner); err != nil {
		return nil, nil, nil, err
	}
	newJobs, err := validateBatch(req, errs, ok, s.MaxTargets)
	if err != nil {
		return nil, nil, nil, err
	}
	var hostErrs FieldErrors
	CheckHostConcurrency(s.MaxHostConcurrency, req.Options, "options", &hostErrs)
	for i, t := range req.Targets {
		CheckHostConcurrency(s.MaxHostConcurrency, t.Options, fmt.Sprintf("targets[%d].options", i), &hostErrs)
	}
	if err := ValidationErrors(hostErrs); err != nil {
		return nil, nil, nil, err
	}
	return newJobs, req, crawl, nil
}

// newBatch is the batch and its queued jobs, not yet stored.
func newBatch(sub Submission, hash string, req *BatchRequest, crawl *Crawl, newJobs []NewJob) (*Batch, []*Job) {
	now := time.Now().UTC()
	b := &Batch{ID: NewID(), OwnerKeyID: sub.Owner, Labels: req.Labels, Total: len(newJobs), CreatedAt: now,
		IdempotencyKey: sub.IdempotencyKey, RequestHash: hash, Crawl: crawl, Interactive: sub.Interactive}
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	if req.Options != nil {
		b.Options, _ = json.Marshal(req.Options)
	}
	shared := req.SharedOptions()
	b.JobOptions = &shared
	b.Webhook = req.BatchWebhook()
	jobs := make([]*Job, len(newJobs))
	for i, nj := range newJobs {
		jobs[i] = &Job{ID: NewID(), BatchID: b.ID, Seq: i, URL: nj.URL, Name: nj.Name, Options: nj.Options,
			Status: StatusQueued, CreatedAt: now, UpdatedAt: now}
		if crawl != nil {
			jobs[i].Crawl = &CrawlPos{URLKey: CrawlKey(nj.URL)}
		}
	}
	return b, jobs
}

// replay returns the batch an Idempotency-Key already created, ErrNotFound
// if the key is new, or ErrIdempotencyConflict for another body.
func (s *Service) replay(ctx context.Context, sub Submission, hash string) (*Batch, []*Job, error) {
	id, prev, err := s.Repo.FindIdempotency(ctx, sub.Owner, sub.IdempotencyKey)
	if err != nil {
		return nil, nil, err
	}
	if prev != hash {
		return nil, nil, ErrIdempotencyConflict
	}
	b, err := s.Repo.GetBatch(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var all []*Job
	cursor := ""
	for {
		page, next, err := s.Repo.ListJobs(ctx, id, "", 1000, cursor)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, page...)
		if next == "" {
			return b, all, nil
		}
		cursor = next
	}
}

// Cancel cancels every job of the batch that has not started.
func (s *Service) Cancel(ctx context.Context, batchID string) (*Batch, error) {
	ids, err := s.Repo.CancelBatch(ctx, batchID)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := s.Queue.Delete(ctx, id); err != nil {
			// The handler skips canceled jobs anyway.
			s.logger().Warn("delete canceled task", "job_id", id, "err", err)
		}
	}
	return s.Repo.GetBatch(ctx, batchID)
}

func (s *Service) logger() *slog.Logger { return Log(s.Logger) }

// NewID returns a new time-ordered id (UUIDv7) for any row.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// ValidID reports whether s is a UUID, so lookups of junk ids are a 404 and
// never reach the database as a type error.
func ValidID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}
