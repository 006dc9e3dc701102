package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

var (
	_ maintenance.RetentionStore  = (*Store)(nil)
	_ maintenance.ObjectKeyLister = (*Store)(nil)
	_ maintenance.SlotClaimer     = (*Store)(nil)
)

// batchPolicy is, for a batch b (joined with its key k, its run's rank rk
// and its suite s), the retention days that apply: the suite's, else the
// key's, else $2. keepRuns is the suite's keep_runs (0: none).
const (
	batchPolicyDays = `coalesce(CASE WHEN rk.suite_id IS NOT NULL THEN (s.spec->'retention'->>'days')::int END, k.retention_days, $2)`
	batchKeepRuns   = `coalesce((s.spec->'retention'->>'keep_runs')::int, 0)`
	// batchActive: queued or running jobs, or a running run.
	batchActive = `(EXISTS (SELECT 1 FROM jobs aj WHERE aj.batch_id = b.id AND aj.status IN ('queued', 'running'))
		OR EXISTS (SELECT 1 FROM runs ar WHERE ar.batch_id = b.id AND ar.status = 'running'))`
	// batchProtected: a baseline (any version: an old one can be restored)
	// or another batch's comparison names one of the batch's artifacts.
	batchProtected = `EXISTS (SELECT 1 FROM jobs pj JOIN artifacts pa ON pa.job_id = pj.id WHERE pj.batch_id = b.id AND (
		EXISTS (SELECT 1 FROM baselines pb WHERE pb.artifact_id = pa.id)
		OR EXISTS (SELECT 1 FROM comparisons pc JOIN jobs pcj ON pcj.id = pc.job_id WHERE pcj.batch_id <> b.id
			AND (pc.baseline_artifact_id = pa.id OR pc.current_artifact_id = pa.id OR pc.diff_artifact_id = pa.id))))`
)

// RetentionCandidates implements maintenance.RetentionStore: batches past their
// days, or runs beyond their suite's keep_runs; deletable ones first, then
// newest first (a run goes before the older runs its comparisons name).
func (s *Store) RetentionCandidates(ctx context.Context, now time.Time, defaultDays, limit int) ([]maintenance.RetentionCandidate, error) {
	// Deletable batches first, so kept ones (old approved runs) never fill
	// the limit and starve the rest.
	rows, err := s.pool.Query(ctx, `WITH rk AS (
			SELECT batch_id, suite_id, row_number() OVER (PARTITION BY suite_id ORDER BY created_at DESC, id DESC) AS rank FROM runs)
		SELECT * FROM (SELECT b.id::text, b.created_at, k.retention_days, coalesce(rk.suite_id::text, '') AS suite_id,
			(s.spec->'retention'->>'days')::int AS suite_days, `+batchKeepRuns+` AS keep_runs, coalesce(rk.rank, 0)::int AS rank,
			`+batchActive+` AS active, `+batchProtected+` AS protected
		FROM batches b
		LEFT JOIN api_keys k ON k.id = b.api_key_id
		LEFT JOIN rk ON rk.batch_id = b.id
		LEFT JOIN suites s ON s.id = rk.suite_id
		WHERE b.created_at <= $1 AND (
			(`+batchPolicyDays+` > 0 AND b.created_at <= $1 - `+batchPolicyDays+` * interval '24 hours')
			OR (`+batchKeepRuns+` > 0 AND rk.rank > `+batchKeepRuns+`))) c
		ORDER BY (c.active OR c.protected), c.created_at DESC, c.id DESC
		LIMIT $3`, now, defaultDays, limit)
	if err != nil {
		return nil, fmt.Errorf("retention candidates: %w", err)
	}
	var out []maintenance.RetentionCandidate
	var c maintenance.RetentionCandidate
	var keyDays, suiteDays *int
	_, err = pgx.ForEachRow(rows, []any{&c.BatchID, &c.CreatedAt, &keyDays, &c.SuiteID, &suiteDays, &c.KeepRuns,
		&c.RunRank, &c.Active, &c.Protected}, func() error {
		c.KeyDays, c.SuiteDays = copyInt(keyDays), copyInt(suiteDays)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retention candidates: %w", err)
	}
	return out, nil
}

func copyInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// errKeep rolls back a deletion that found the batch gone, active or protected.
var errKeep = errors.New("batch kept")

// DeleteBatchRows implements maintenance.RetentionStore. It locks the batch's jobs
// (in the order a worker finishing a job takes them: jobs, then the batch),
// checks again that nothing is queued or running and nothing outside the
// batch names its artifacts, deletes the batch (its jobs, artifacts,
// thumbnails, run, comparisons and webhooks go with it), and returns the
// object keys its rows named that no row names any more.
func (s *Store) DeleteBatchRows(ctx context.Context, id string, dryRun bool) (maintenance.BatchDeletion, error) {
	var out maintenance.BatchDeletion
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockDeletable(ctx, tx, id); err != nil {
			return err
		}
		objects, err := batchObjects(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM batches WHERE id = $1`, id); err != nil {
			return fmt.Errorf("delete batch: %w", err)
		}
		keys := make([]string, len(objects))
		for i, o := range objects {
			keys[i] = o.Key
		}
		// Under the keys' locks: a commit naming one either went first (its
		// row keeps the object) or finds it marked and refuses it.
		free, err := markUnreferenced(ctx, tx, keys)
		if err != nil {
			return err
		}
		out.Deleted = true
		for _, o := range objects {
			if free[o.Key] {
				out.Objects = append(out.Objects, o)
			}
		}
		if dryRun {
			return errKeep // roll back: the answer says what would have gone
		}
		return nil
	})
	if errors.Is(err, errKeep) {
		return out, nil
	}
	if err != nil {
		return maintenance.BatchDeletion{}, err
	}
	return out, nil
}

// lockDeletable locks the batch's jobs, then the batch, and is errKeep when the batch is
// gone, protected, has a queued or running job, or its run is running.
func lockDeletable(ctx context.Context, tx pgx.Tx, id string) error {
	var active bool
	rows, err := tx.Query(ctx, `SELECT status FROM jobs WHERE batch_id = $1 FOR UPDATE`, id)
	if err != nil {
		return fmt.Errorf("lock jobs: %w", err)
	}
	var status string
	if _, err := pgx.ForEachRow(rows, []any{&status}, func() error {
		active = active || jobs.JobStatus(status) == jobs.StatusQueued || jobs.JobStatus(status) == jobs.StatusRunning
		return nil
	}); err != nil {
		return fmt.Errorf("lock jobs: %w", err)
	}
	var protected, runRunning bool
	err = tx.QueryRow(ctx, `SELECT `+batchProtected+`,
			EXISTS (SELECT 1 FROM runs ar WHERE ar.batch_id = b.id AND ar.status = 'running')
		FROM batches b WHERE b.id = $1 FOR UPDATE OF b`, id).Scan(&protected, &runRunning)
	if errors.Is(err, pgx.ErrNoRows) {
		return errKeep
	}
	if err != nil {
		return fmt.Errorf("lock batch: %w", err)
	}
	if active || protected || runRunning {
		return errKeep
	}
	return nil
}

// batchObjects is every object key the batch's artifacts and thumbnails name, with its size.
func batchObjects(ctx context.Context, tx pgx.Tx, id string) ([]maintenance.StoredObject, error) {
	rows, err := tx.Query(ctx, `SELECT object_key, max(bytes) FROM (
			SELECT a.object_key, a.bytes FROM artifacts a JOIN jobs j ON j.id = a.job_id WHERE j.batch_id = $1
			UNION ALL
			SELECT t.object_key, t.bytes FROM thumbnails t JOIN artifacts a ON a.id = t.artifact_id
				JOIN jobs j ON j.id = a.job_id WHERE j.batch_id = $1) k
		GROUP BY object_key`, id)
	if err != nil {
		return nil, fmt.Errorf("object keys: %w", err)
	}
	var objects []maintenance.StoredObject
	var o maintenance.StoredObject
	if _, err := pgx.ForEachRow(rows, []any{&o.Key, &o.Bytes}, func() error {
		objects = append(objects, o)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("object keys: %w", err)
	}
	return objects, nil
}

// referencedKeys is which of keys an artifact or thumbnail row names, in q.
func referencedKeys(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT object_key FROM artifacts WHERE object_key = ANY($1::text[])
		UNION SELECT object_key FROM thumbnails WHERE object_key = ANY($1::text[])`, keys)
	if err != nil {
		return nil, fmt.Errorf("referenced keys: %w", err)
	}
	var key string
	if _, err := pgx.ForEachRow(rows, []any{&key}, func() error {
		out[key] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("referenced keys: %w", err)
	}
	return out, nil
}

// ObjectKeysAfter implements maintenance.ObjectKeyLister, in byte order (the
// bucket's listing order).
func (s *Store) ObjectKeysAfter(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT k FROM (
			SELECT object_key COLLATE "C" AS k FROM artifacts WHERE object_key COLLATE "C" > $1
			UNION SELECT object_key COLLATE "C" FROM thumbnails WHERE object_key COLLATE "C" > $1) x
		ORDER BY k LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("object keys: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("object keys: %w", err)
	}
	return out, nil
}

// ClaimSweepSlot implements maintenance.SlotClaimer: true when no pass claimed
// slot before. Claims older than a week are dropped.
func (s *Store) ClaimSweepSlot(ctx context.Context, slot time.Time) (bool, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sweep_passes WHERE slot < now() - interval '7 days'`); err != nil {
		return false, fmt.Errorf("drop old sweep claims: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO sweep_passes (slot) VALUES ($1) ON CONFLICT DO NOTHING`, slot)
	if err != nil {
		return false, fmt.Errorf("claim sweep slot: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// SetKeyRetention sets a key's own retention in days; nil returns it to the
// default (SNAPQ_RETENTION_DAYS). A missing key is jobs.ErrNotFound.
func (s *Store) SetKeyRetention(ctx context.Context, id string, days *int) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET retention_days = $2 WHERE id = $1`, id, days)
	if err != nil {
		return fmt.Errorf("set key retention: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return jobs.ErrNotFound
	}
	return nil
}
