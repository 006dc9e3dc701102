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
	Repo   Repository
	Queue  Queue
	Logger *slog.Logger
	// MaxInFlight caps an API key's queued and running jobs (0: no cap). The
	// check is made before the batch is written, so concurrent submissions
	// can overshoot it by one batch.
	MaxInFlight int
	// MaxTargets caps the targets of one batch (default MaxTargets).
	MaxTargets int
}

// Submission is one POST /v1/batches.
type Submission struct {
	Body           []byte
	Owner          string // API key id, "" without auth
	IdempotencyKey string // optional
}

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// Submit validates a batch body, stores the batch and its jobs in one
// transaction, then enqueues one task per job. A failed enqueue is logged,
// not returned: the job is stored as queued and the reconciler enqueues it.
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
	newJobs, req, err := ParseBatchRequest(sub.Body, s.MaxTargets)
	if err != nil {
		return nil, nil, false, err
	}
	if s.MaxInFlight > 0 && sub.Owner != "" {
		n, err := s.Repo.CountUnfinished(ctx, sub.Owner)
		if err != nil {
			return nil, nil, false, err
		}
		if n+len(newJobs) > s.MaxInFlight {
			return nil, nil, false, fmt.Errorf("%w: %d unfinished and %d new, the limit is %d", ErrTooManyInFlight, n, len(newJobs), s.MaxInFlight)
		}
	}
	now := time.Now().UTC()
	b = &Batch{ID: newID(), OwnerKeyID: sub.Owner, Labels: req.Labels, Total: len(newJobs), CreatedAt: now,
		IdempotencyKey: sub.IdempotencyKey, RequestHash: hash}
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	if req.Options != nil {
		b.Options, _ = json.Marshal(req.Options)
	}
	b.Webhook = req.BatchWebhook()
	jobs = make([]*Job, len(newJobs))
	for i, nj := range newJobs {
		jobs[i] = &Job{ID: newID(), BatchID: b.ID, Seq: i, URL: nj.URL, Name: nj.Name, Options: nj.Options,
			Status: StatusQueued, CreatedAt: now, UpdatedAt: now}
	}
	if err := s.Repo.CreateBatch(ctx, b, jobs); errors.Is(err, ErrIdempotencyTaken) {
		// A concurrent request with the same key won the race.
		b, jobs, err := s.replay(ctx, sub, hash)
		return b, jobs, err == nil, err
	} else if err != nil {
		return nil, nil, false, fmt.Errorf("store batch: %w", err)
	}
	b.Counts.Queued = len(jobs)
	for _, j := range jobs {
		// The batch is committed: from here on, it must not fail the request.
		if err := s.Queue.Enqueue(context.WithoutCancel(ctx), j.ID, j.Options.JobTimeout()); err != nil {
			s.logger().Warn("enqueue failed; the reconciler will retry", "job_id", j.ID, "err", err)
		}
	}
	return b, jobs, false, nil
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

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// ValidID reports whether s is a UUID, so lookups of junk ids are a 404 and
// never reach the database as a type error.
func ValidID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// Reconciler makes sure every accepted job reaches a worker: it re-enqueues
// queued jobs whose task is missing from Redis (enqueue failed after commit,
// or Redis lost data) and settles running jobs whose task is gone.
type Reconciler struct {
	Repo   Repository
	Queue  Queue
	Logger *slog.Logger
	// Grace is how long a job may sit unchanged before it is checked;
	// default 30 s. Running jobs get their own timeout on top.
	Grace time.Duration
	// Webhooks, when set, also enqueues pending webhook deliveries whose
	// task is missing (webhook_queue.go).
	Webhooks WebhookQueue
	// Compares, when set, also enqueues comparisons of final run captures
	// that have none (compare.go).
	Compares CompareQueue
}

// Run reconciles every interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := r.Once(ctx); err != nil && ctx.Err() == nil {
			r.logger().Warn("reconcile", "err", err)
		} else if n > 0 {
			r.logger().Info("reconciled jobs", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once runs one pass and returns how many jobs it acted on.
func (r *Reconciler) Once(ctx context.Context) (int, error) {
	grace := r.Grace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	refs, err := r.Repo.Unfinished(ctx, time.Now().Add(-grace), 1000)
	if err != nil {
		return 0, err
	}
	acted := 0
	var errs []error
	for _, ref := range refs {
		did, err := r.one(ctx, ref)
		if did {
			acted++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", ref.ID, err))
		}
	}
	n, err := r.reconcileWebhooks(ctx)
	m, cerr := r.reconcileCompares(ctx)
	return acted + n + m, errors.Join(append(errs, err, cerr)...)
}

func (r *Reconciler) one(ctx context.Context, ref JobRef) (bool, error) {
	state, lastErr, err := r.Queue.TaskState(ctx, ref.ID)
	if err != nil {
		return false, err
	}
	switch state {
	case "":
		// No task: enqueue again. A running job without a task lost its
		// worker and its task (Redis data loss); it starts over.
		job, err := r.Repo.GetJob(ctx, ref.ID)
		if err != nil {
			return false, err
		}
		if job.Terminal() {
			return false, nil
		}
		if job.Status == StatusRunning {
			if time.Since(job.UpdatedAt) < job.Options.JobTimeout()+taskSlack {
				return false, nil // may still be in a worker's hands
			}
			if err := r.Repo.Requeue(ctx, ref.ID); err != nil {
				return false, err
			}
		}
		return true, r.Queue.Enqueue(ctx, ref.ID, job.Options.JobTimeout())
	case "archived", "completed":
		// The queue gave up (or finished) without the job reaching a final
		// status, e.g. the worker died on the last attempt.
		job, err := r.Repo.GetJob(ctx, ref.ID)
		if err != nil || job.Terminal() {
			return false, err
		}
		msg := "the worker stopped before finishing the job"
		if lastErr != "" {
			msg += ": " + lastErr
		}
		return true, r.Repo.FailJob(ctx, ref.ID, job.Attempts, JobError{Code: CodeWorkerLost, Message: msg}, true)
	default:
		return false, nil
	}
}

func (r *Reconciler) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}
