package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/jobs"
)

// A captured page's bookkeeping, in few round trips (issue 27: at most 4 a
// page on the worker; jobs.JobStore). Each step sends its statements as one
// pipelined pgx.Batch: the start is one implicit transaction (the job's row,
// then its batch's counts for the event), an outcome is an explicit one whose
// BEGIN rides in the batch (pgx.Batch.BeginTx) and whose COMMIT or ROLLBACK
// follows once Go has read every answer: the job's row (is the attempt still
// current?), its artifacts with their tombstone check, the batch's finish and
// completion delivery, the batch's counts and whether the job is a run's
// capture. Statements in one transaction see the ones before them, and each
// takes a fresh snapshot (READ COMMITTED), so the finish check, after the
// batch row's lock, sees every job committed before it (finishBatch).

// StartJob implements jobs.JobStore in one round trip: the job's start and
// its batch's counts for the event.
func (s *Store) StartJob(ctx context.Context, id string) (*jobs.Job, bool, error) {
	b := &pgx.Batch{}
	var j *jobs.Job
	b.Queue(`UPDATE jobs SET status = 'running', attempts = attempts + 1, result = NULL,
		started_at = coalesce(started_at, now()), updated_at = now()
		WHERE id = $1 AND status IN ('queued', 'running') RETURNING `+jobColumns+`, `+sharedOptionsColumn, id).
		QueryRow(func(row pgx.Row) error {
			var err error
			if j, err = scanJob(row, true, nil); errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
	var batch *jobs.Batch
	queueBatchOfJob(b, id, &batch)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, fmt.Errorf("start job %s: %w", id, unavailable(err))
	}
	if j == nil {
		j, err := s.GetJob(ctx, id)
		return j, false, unavailable(err)
	}
	if j.Crawl != nil && batch != nil {
		j.Crawl.Batch = batch.Crawl // the page's completion needs them (CompleteCrawlJob)
	}
	s.publishBatch(ctx, j.BatchID, batch, jobChanged{id: j.ID, name: j.Name, url: j.URL, status: string(j.Status), attempt: j.Attempts})
	return j, true, nil
}

// CompleteAttempt implements jobs.JobStore in two round trips.
func (s *Store) CompleteAttempt(ctx context.Context, id string, attempt int, result *jobs.Result, arts []*jobs.Artifact) (jobs.Settled, error) {
	res, err := json.Marshal(result)
	if err != nil {
		return jobs.Settled{}, err
	}
	o := &outcome{}
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(`UPDATE jobs SET status = 'succeeded', result = $3, error_code = NULL,
		error_message = NULL, finished_at = now(), updated_at = now()
		WHERE id = $1 AND status = 'running' AND attempts = $2 RETURNING batch_id, name, url`, id, attempt, res).
		QueryRow(o.scanJob)
	queueReplaceArtifacts(b, id, arts)
	o.queueSettle(b, id, true)
	if err := s.sendOutcome(ctx, b, o, true); err != nil {
		return jobs.Settled{}, fmt.Errorf("complete job %s: %w", id, unavailable(err))
	}
	if o.Current {
		s.publishBatch(ctx, o.batchID, o.batch, jobChanged{id: id, name: o.name, url: o.url, status: string(jobs.StatusSucceeded), attempt: attempt})
	}
	return o.Settled, nil
}

// FailAttempt implements jobs.JobStore in two round trips. A failure that is
// not final leaves the job queued: its batch cannot finish.
func (s *Store) FailAttempt(ctx context.Context, id string, attempt int, e jobs.JobError, result *jobs.Result, final bool,
	kept []*jobs.Artifact) (jobs.Settled, error) {
	status, finished := string(jobs.StatusQueued), "NULL"
	if final {
		status, finished = string(jobs.StatusFailed), "now()"
	}
	var res []byte // NULL without a result
	if result != nil {
		var err error
		if res, err = json.Marshal(result); err != nil {
			return jobs.Settled{}, fmt.Errorf("fail job %s: %w", id, err)
		}
	}
	o := &outcome{}
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(`UPDATE jobs SET status = $3, error_code = $4, error_message = $5, result = $6,
		finished_at = `+finished+`, updated_at = now()
		WHERE id = $1 AND attempts = $2 AND status IN ('queued', 'running') RETURNING batch_id, name, url`,
		id, attempt, status, e.Code, e.Message, res).QueryRow(o.scanJob)
	if kept != nil && final {
		queueReplaceArtifacts(b, id, kept)
	}
	o.queueSettle(b, id, final)
	if err := s.sendOutcome(ctx, b, o, kept != nil && final); err != nil {
		return jobs.Settled{}, fmt.Errorf("fail job %s: %w", id, unavailable(err))
	}
	if o.Current {
		if !final {
			status = events.StatusRetrying // the job is queued again, for its next attempt
		}
		s.publishBatch(ctx, o.batchID, o.batch, jobChanged{id: id, name: o.name, url: o.url, status: status, attempt: attempt, err: &e})
	}
	return o.Settled, nil
}

// outcome collects the answers of an attempt's outcome batch.
type outcome struct {
	jobs.Settled
	// answered: the job's row answered (Current says whether it matched).
	answered           bool
	batchID, name, url string
	batch              *jobs.Batch
}

// scanJob reads the job row's answer: no row is an attempt no longer
// current (another attempt owns the job, or it is final already).
func (o *outcome) scanJob(row pgx.Row) error {
	err := row.Scan(&o.batchID, &o.name, &o.url)
	o.answered = err == nil || errors.Is(err, pgx.ErrNoRows)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	o.Current = err == nil
	return err
}

// queueSettle queues what follows the job's row: with finish, the batch's
// finish and completion delivery (after the batch row's lock) and whether the
// job is a run's capture; always the batch's counts for the event.
func (o *outcome) queueSettle(b *pgx.Batch, jobID string, finish bool) {
	if finish {
		onErr(b.Queue(`SELECT 1 FROM batches WHERE id = (SELECT batch_id FROM jobs WHERE id = $1) FOR UPDATE`, jobID), "lock batch")
		b.Queue(finishSQL(`SELECT batch_id AS id FROM jobs WHERE id = $1`), jobID, uuid.Must(uuid.NewV7()).String(),
			jobs.EventBatchCompleted).QueryRow(func(row pgx.Row) error {
			return row.Scan(&o.BatchFinished, &o.Deliveries)
		})
		b.Queue(`SELECT run_id::text, target, viewport, job_id::text, coalesce(reference_job_id::text, '')
			FROM run_captures WHERE job_id = $1 OR reference_job_id = $1 ORDER BY job_id = $1 DESC LIMIT 1`, jobID).
			QueryRow(o.scanRunCapture)
	}
	queueBatchOfJob(b, jobID, &o.batch)
}

// scanRunCapture reads which run capture the job is, if any.
func (o *outcome) scanRunCapture(row pgx.Row) error {
	c := &o.Capture
	err := row.Scan(&c.RunID, &c.Target, &c.Viewport, &c.JobID, &c.ReferenceJobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	o.RunCapture = err == nil
	return err
}

// sendOutcome sends an outcome's batch and commits it when the attempt was
// current and every statement succeeded; otherwise it rolls it back. With
// arts, the tombstone test hook runs under the keys' locks first.
func (s *Store) sendOutcome(ctx context.Context, b *pgx.Batch, o *outcome, arts bool) error {
	br := s.pool.SendBatch(ctx, b)
	tx := br.Tx()
	err := br.Close()
	if err != nil || !o.Current {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		if !o.answered || o.Current { // the job's row did not answer, or a later statement failed
			return err
		}
		o.Settled = jobs.Settled{}
		return nil
	}
	if arts && tombstoneHook != nil {
		tombstoneHook()
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	o.Known = true
	return nil
}

// finishSQL stamps finished_at on the batch `target` selects (a row with its
// id) once no job of it is left unfinished and, when it did, creates the
// batch's pending completion delivery (parameters after target's: the
// delivery's id, the event). It answers whether it finished the batch and
// the ids of the deliveries it created. Run it after the batch row's lock
// (finishBatch).
func finishSQL(target string) string {
	return `WITH t AS (` + target + `),
	f AS (UPDATE batches b SET finished_at = now() FROM t WHERE b.id = t.id AND b.finished_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE batch_id = t.id AND status IN ('queued', 'running')) RETURNING b.id),
	d AS (INSERT INTO webhook_deliveries (id, batch_id, event, status)
		SELECT $2, w.batch_id, $3, 'pending' FROM f JOIN batch_webhooks w ON w.batch_id = f.id AND w.event = $3
		ON CONFLICT (batch_id, event) DO NOTHING RETURNING id::text)
	SELECT EXISTS (SELECT 1 FROM f), coalesce((SELECT array_agg(id) FROM d), '{}')`
}

// queueBatchOfJob queues the read of job id's batch with its counts into
// *out (nil: no such job), set once the batch's results are read.
func queueBatchOfJob(b *pgx.Batch, jobID string, out **jobs.Batch) {
	b.Queue(`SELECT `+batchColumns+` FROM batches b LEFT JOIN jobs j ON j.batch_id = b.id
		WHERE b.id = (SELECT batch_id FROM jobs WHERE id = $1) GROUP BY b.id`, jobID).QueryRow(func(row pgx.Row) error {
		bt, err := scanBatch(row)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		*out = bt
		return err
	})
}

// queueReplaceArtifacts queues the replacement of job id's artifact rows by
// arts, after the tombstone check of their objects (queueTombstones).
func queueReplaceArtifacts(b *pgx.Batch, id string, arts []*jobs.Artifact) {
	queueTombstones(b, arts)
	b.Queue(`DELETE FROM artifacts WHERE job_id = $1`, id)
	for _, a := range arts {
		queueArtifact(b, id, a, "artifact")
		if t := a.Thumbnail; t != nil {
			onErr(b.Queue(`INSERT INTO thumbnails (artifact_id, object_key, content_type, bytes, width, height)
				VALUES ($1, $2, $3, $4, $5, $6)`, a.ID, t.ObjectKey, t.ContentType, t.Bytes, t.Width, t.Height), "thumbnail of "+a.Name)
		}
		if a.RowHashes != nil {
			onErr(b.Queue(`INSERT INTO segment_row_hashes (artifact_id, hashes) VALUES ($1, $2)`, a.ID, a.RowHashes),
				"row hashes of "+a.Name)
		}
	}
}

// queueArtifact queues the insert of one artifact row of job id (what names
// it in an error).
func queueArtifact(b *pgx.Batch, id string, a *jobs.Artifact, what string) {
	qq := b.Queue(`INSERT INTO artifacts (id, job_id, kind, name, seq, object_key, content_type,
		bytes, width, height, sha256, crc32) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULLIF($12::bigint, 0))`,
		a.ID, id, a.Kind, a.Name, a.Seq, a.ObjectKey, a.ContentType, a.Bytes, a.Width, a.Height, a.SHA256, int64(a.CRC32))
	name := a.Name
	qq.Fn = func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return artifactInsertError(what, name, err)
		}
		return nil
	}
}

// onErr makes a queued statement's error say what failed (msg).
func onErr(qq *pgx.QueuedQuery, msg string) {
	qq.Fn = func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("%s: %w", msg, err)
		}
		return nil
	}
}

// queueTombstones queues the reuse side of the tombstone check
// (tombstones.go) for arts' objects: the keys' shared locks, the marks of
// keys uploaded afresh removed, and a reused key marked within the window
// refused (jobs.ErrObjectGone from the batch).
func queueTombstones(b *pgx.Batch, arts []*jobs.Artifact) {
	var reused, fresh []string
	for _, a := range arts {
		add := &fresh
		if a.Reused {
			add = &reused
		}
		*add = append(*add, a.ObjectKey)
		if t := a.Thumbnail; t != nil {
			add = &fresh
			if t.Reused {
				add = &reused
			}
			*add = append(*add, t.ObjectKey)
		}
	}
	keys := slices.Concat(reused, fresh)
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	onErr(b.Queue(`SELECT pg_advisory_xact_lock_shared(hashtextextended(k, 26))
		FROM (SELECT k FROM unnest($1::text[]) AS k ORDER BY k) s`, slices.Compact(keys)), "lock object keys")
	if len(fresh) > 0 {
		onErr(b.Queue(`DELETE FROM object_tombstones WHERE object_key = ANY($1::text[])`, fresh), "unmark uploaded objects")
	}
	if len(reused) > 0 {
		b.Queue(`SELECT object_key FROM object_tombstones WHERE object_key = ANY($1::text[])
			AND coalesce(deleted_at, marked_at) > now() - `+tombstoneWindow+` LIMIT 1`, reused).
			QueryRow(func(row pgx.Row) error {
				var gone string
				err := row.Scan(&gone)
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("object tombstones: %w", err)
				}
				return fmt.Errorf("%w: %s", jobs.ErrObjectGone, gone)
			})
	}
}
