package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/migrations"
)

// Store implements the domain's repository interfaces on Postgres (guards.go).
type Store struct {
	pool *pgxpool.Pool
	// events receives committed state changes (events.go); nil: none.
	events *events.Publisher
	// sealer seals suites' secrets at rest (secrets.go); nil: suites with
	// secrets cannot be written.
	sealer *authprofile.Sealer
}

// Open connects to Postgres (SNAPQ_DATABASE_URL) and checks the connection.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	if databaseURL == "" {
		return nil, errors.New("database url is empty: set SNAPQ_DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable")
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse SNAPQ_DATABASE_URL: %w", err)
	}
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres at %s: %w", cfg.ConnConfig.Host, err)
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks the connection (the api's readiness).
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Migrate applies every migration not yet applied, in order, each in its
// own transaction, holding an advisory lock so concurrent starts are safe.
// The lock is the schema's own (like the dispatch lock): deployments in
// other schemas of the same database (tests run one per schema) migrate side
// by side instead of one after another.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	const lockID = 7_353_001 // arbitrary, snapq's own
	const schemaKey = `hashtext(coalesce(current_schema(), ''))`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, `+schemaKey+`)`, lockID); err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, `+schemaKey+`)`, lockID) //nolint:errcheck
	done, err := appliedMigrations(ctx, conn.Conn())
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var applied []string
	for _, name := range names {
		version := strings.TrimSuffix(name, ".sql")
		if done[version] {
			continue
		}
		sql, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			return applied, err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("apply migration %s: %w", name, err)
		}
		applied = append(applied, version)
	}
	return applied, nil
}

// appliedMigrations creates schema_migrations when missing and returns the
// versions it holds.
func appliedMigrations(ctx context.Context, conn *pgx.Conn) (map[string]bool, error) {
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	done := make(map[string]bool, len(versions))
	for _, v := range versions {
		done[v] = true
	}
	return done, nil
}

// CreateBatch implements jobs.BatchStore.
func (s *Store) CreateBatch(ctx context.Context, b *jobs.Batch, js []*jobs.Job) error {
	return s.CreateBatchLimited(ctx, b, js, 0)
}

// CreateBatchLimited implements jobs.InFlightLimiter.
func (s *Store) CreateBatchLimited(ctx context.Context, b *jobs.Batch, js []*jobs.Job, maxInFlight int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkInFlight(ctx, tx, b.OwnerKeyID, len(js), maxInFlight); err != nil {
			return err
		}
		return s.insertBatch(ctx, tx, b, js)
	})
}

// ownerLockSpace is the first key of the per-owner advisory locks that make
// a limit's count and the insert it allows one step (the second key is a
// hash of the owner; two owners sharing a hash only wait for each other).
// Two-key advisory locks do not share Migrate's single-key lock space.
const ownerLockSpace = 7_353_002

// lockOwner takes owner's lock until tx ends.
func lockOwner(ctx context.Context, tx pgx.Tx, owner string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, ownerLockSpace, owner); err != nil {
		return fmt.Errorf("lock owner %s: %w", owner, err)
	}
	return nil
}

// checkInFlight locks owner in tx and refuses add new jobs that would take
// its unfinished ones over maxInFlight (no cap when maxInFlight <= 0 or
// without an owner). The lock is held until tx commits, so the next
// writer's count includes these jobs.
func checkInFlight(ctx context.Context, tx pgx.Tx, owner string, add, maxInFlight int) error {
	if maxInFlight <= 0 || owner == "" {
		return nil
	}
	if err := lockOwner(ctx, tx, owner); err != nil {
		return err
	}
	n, err := countUnfinished(ctx, tx, owner)
	if err != nil {
		return err
	}
	if n+add > maxInFlight {
		return jobs.TooManyInFlight(n, add, maxInFlight)
	}
	return nil
}

// insertBatch writes a batch, its webhook, its idempotency key and its jobs in tx.
func (s *Store) insertBatch(ctx context.Context, tx pgx.Tx, b *jobs.Batch, js []*jobs.Job) error {
	labels, err := json.Marshal(b.Labels)
	if err != nil {
		return err
	}
	opts := b.Options
	if len(opts) == 0 {
		opts = json.RawMessage(`{}`)
	}
	// The jobs' shared options are stored once; each job row keeps only its override.
	shared := b.JobOptions
	if shared == nil && len(js) > 0 {
		shared = &js[0].Options
	}
	var sharedJSON []byte
	var sharedArg any // NULL without jobs
	if shared != nil {
		if sharedJSON, err = json.Marshal(shared); err != nil {
			return err
		}
		sharedArg = sharedJSON
	}
	var crawl any // NULL outside crawl batches
	if b.Crawl != nil {
		if crawl, err = json.Marshal(b.Crawl); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO batches (id, labels, options, total, created_at, api_key_id, job_options, crawl)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, '')::uuid, $7, $8)`,
		b.ID, labels, opts, b.Total, b.CreatedAt, b.OwnerKeyID, sharedArg, crawl); err != nil {
		return fmt.Errorf("insert batch: %w", err)
	}
	if err := s.insertBatchWebhook(ctx, tx, b); err != nil {
		return err
	}
	if err := claimIdempotencyKey(ctx, tx, b); err != nil {
		return err
	}
	return insertJobs(ctx, tx, b, js, shared, sharedJSON)
}

// claimIdempotencyKey records the batch's idempotency key, if it has one;
// jobs.ErrIdempotencyTaken when another request holds it.
func claimIdempotencyKey(ctx context.Context, tx pgx.Tx, b *jobs.Batch) error {
	if b.IdempotencyKey == "" {
		return nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (owner, key, request_hash, batch_id)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, b.OwnerKeyID, b.IdempotencyKey, b.RequestHash, b.ID)
	if err != nil {
		return fmt.Errorf("claim idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return jobs.ErrIdempotencyTaken
	}
	return nil
}

// insertJobs copies the batch's jobs in, each with only its override of
// the shared options (sharedJSON is shared's JSON).
func insertJobs(ctx context.Context, tx pgx.Tx, b *jobs.Batch, js []*jobs.Job, shared *jobs.Options, sharedJSON []byte) error {
	rows := make([][]any, len(js))
	for i, j := range js {
		override, err := jobs.OptionsOverride(shared, sharedJSON, &j.Options)
		if err != nil {
			return fmt.Errorf("job %d options: %w", j.Seq, err)
		}
		var o any // NULL: the job's options are the shared ones
		if override != nil {
			o = []byte(override)
		}
		var depth, parent, foundOn, key any // NULL outside crawl batches
		if c := j.Crawl; c != nil {
			depth, key = int32(c.Depth), c.URLKey
			if c.ParentID != "" {
				parent, foundOn = c.ParentID, c.FoundOn
			}
		}
		rows[i] = []any{j.ID, j.BatchID, j.Seq, j.URL, j.Name, o, string(jobs.StatusQueued), j.CreatedAt, j.UpdatedAt,
			jobs.OptionsHash(j.Options), // the result cache's (cache.go)
			depth, parent, foundOn, key, b.Interactive}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"jobs"},
		[]string{"id", "batch_id", "seq", "url", "name", "options", "status", "created_at", "updated_at", "options_hash",
			"depth", "parent_id", "found_on", "url_key", "interactive"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("insert jobs: %w", err)
	}
	return nil
}

const batchColumns = `b.id, coalesce(b.api_key_id::text, ''), b.labels, b.options, b.total, b.created_at, b.finished_at, b.crawl, b.crawl_skipped,
	count(*) FILTER (WHERE j.status = 'queued'), count(*) FILTER (WHERE j.status = 'running'),
	count(*) FILTER (WHERE j.status = 'succeeded'), count(*) FILTER (WHERE j.status = 'failed'),
	count(*) FILTER (WHERE j.status = 'canceled')`

func scanBatch(row pgx.Row) (*jobs.Batch, error) {
	var b jobs.Batch
	var labels []byte
	var opts, crawl []byte
	err := row.Scan(&b.ID, &b.OwnerKeyID, &labels, &opts, &b.Total, &b.CreatedAt, &b.FinishedAt, &crawl, &b.CrawlSkipped,
		&b.Counts.Queued, &b.Counts.Running, &b.Counts.Succeeded, &b.Counts.Failed, &b.Counts.Canceled)
	if err != nil {
		return nil, err
	}
	b.Options = opts
	if err := json.Unmarshal(labels, &b.Labels); err != nil {
		return nil, fmt.Errorf("batch %s labels: %w", b.ID, err)
	}
	if crawl != nil {
		b.Crawl = new(jobs.Crawl)
		if err := json.Unmarshal(crawl, b.Crawl); err != nil {
			return nil, fmt.Errorf("batch %s crawl: %w", b.ID, err)
		}
	}
	return &b, nil
}

// GetBatch implements jobs.BatchStore.
func (s *Store) GetBatch(ctx context.Context, id string) (*jobs.Batch, error) {
	b, err := scanBatch(s.pool.QueryRow(ctx, `SELECT `+batchColumns+`
		FROM batches b LEFT JOIN jobs j ON j.batch_id = b.id WHERE b.id = $1 GROUP BY b.id`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get batch %s: %w", id, err)
	}
	return b, nil
}

// ListBatches implements web.BatchReader. status filters on the derived
// batch status.
func (s *Store) ListBatches(ctx context.Context, owner, status string, limit int, cursor string) ([]*jobs.Batch, string, error) {
	having := ""
	switch jobs.BatchStatus(status) {
	case jobs.BatchCompleted:
		having = `HAVING count(*) FILTER (WHERE j.status IN ('queued','running')) = 0`
	case jobs.BatchQueued:
		having = `HAVING count(*) FILTER (WHERE j.status = 'queued') = b.total`
	case jobs.BatchRunning:
		having = `HAVING count(*) FILTER (WHERE j.status IN ('queued','running')) > 0
			AND count(*) FILTER (WHERE j.status = 'queued') < b.total`
	}
	args := []any{limit + 1}
	var conds []string
	if owner != jobs.AnyOwner {
		args = append(args, owner)
		conds = append(conds, fmt.Sprintf(`coalesce(b.api_key_id::text, '') = $%d`, len(args)))
	}
	if cursor != "" {
		args = append(args, cursor)
		conds = append(conds, fmt.Sprintf(`b.id < $%d`, len(args)))
	}
	where := ""
	if len(conds) > 0 {
		where = "WHERE " + strings.Join(conds, " AND ")
	}
	rows, err := s.pool.Query(ctx, `SELECT `+batchColumns+` FROM batches b LEFT JOIN jobs j ON j.batch_id = b.id
		`+where+` GROUP BY b.id `+having+` ORDER BY b.id DESC LIMIT $1`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list batches: %w", err)
	}
	defer rows.Close()
	var out []*jobs.Batch
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

const jobColumns = `id, batch_id, seq, url, name, options, status, attempts, coalesce(error_code, ''),
	coalesce(error_message, ''), result, created_at, updated_at, started_at, finished_at,
	depth, coalesce(parent_id::text, ''), coalesce(found_on, ''), coalesce(url_key, '')`

// sharedOptionsColumn is, next to jobColumns, the job's batch's shared options (NULL for
// batches stored before migration 0006, whose jobs hold their full options).
const sharedOptionsColumn = `(SELECT b.job_options FROM batches b WHERE b.id = jobs.batch_id)`

// scanJob scans a row of jobColumns and, when withShared, sharedOptionsColumn; shared, when
// not nil, is the batch's SharedOptions (a listing's, decoded once for all its rows).
func scanJob(row pgx.Row, withShared bool, shared *jobs.SharedOptions) (*jobs.Job, error) {
	var j jobs.Job
	var opts, result, sharedRaw []byte
	var depth *int32
	var crawl jobs.CrawlPos
	dest := []any{&j.ID, &j.BatchID, &j.Seq, &j.URL, &j.Name, &opts, &j.Status, &j.Attempts, &j.ErrorCode,
		&j.ErrorMessage, &result, &j.CreatedAt, &j.UpdatedAt, &j.StartedAt, &j.FinishedAt,
		&depth, &crawl.ParentID, &crawl.FoundOn, &crawl.URLKey}
	if withShared {
		dest = append(dest, &sharedRaw)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if depth != nil {
		crawl.Depth = int(*depth)
		j.Crawl = &crawl
	}
	if shared == nil && sharedRaw != nil {
		shared = jobs.NewSharedOptions(sharedRaw)
	}
	var err error
	switch {
	case shared != nil:
		j.Options, err = shared.Resolve(opts)
	case opts == nil:
		err = errors.New("no options stored")
	default:
		err = json.Unmarshal(opts, &j.Options) // a job stored before migration 0006
	}
	if err != nil {
		return nil, fmt.Errorf("job %s options: %w", j.ID, err)
	}
	if len(result) > 0 {
		j.Result = new(jobs.Result)
		if err := json.Unmarshal(result, j.Result); err != nil {
			return nil, fmt.Errorf("job %s result: %w", j.ID, err)
		}
	}
	return &j, nil
}

// ListJobs implements jobs.BatchStore. The batch's shared options are read and decoded
// once for the page, not once per job.
func (s *Store) ListJobs(ctx context.Context, batchID string, status jobs.JobStatus, limit int, cursor string) ([]*jobs.Job, string, error) {
	var sharedRaw []byte
	err := s.pool.QueryRow(ctx, `SELECT job_options FROM batches WHERE id = $1`, batchID).Scan(&sharedRaw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	var shared *jobs.SharedOptions
	if sharedRaw != nil {
		shared = jobs.NewSharedOptions(sharedRaw)
	}
	q := `SELECT ` + jobColumns + ` FROM jobs WHERE batch_id = $1 AND ($2 = '' OR status = $2)`
	args := []any{batchID, string(status), limit + 1}
	if cursor != "" {
		q += ` AND id > $4`
		args = append(args, cursor)
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY id LIMIT $3`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*jobs.Job, error) { return scanJob(r, false, shared) })
	if err != nil {
		return nil, "", fmt.Errorf("list jobs: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// GetJob implements jobs.JobStore.
func (s *Store) GetJob(ctx context.Context, id string) (*jobs.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+`, `+sharedOptionsColumn+` FROM jobs WHERE id = $1`, id), true, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, unavailable(err))
	}
	return j, nil
}

const artifactColumns = `id, job_id, kind, name, seq, object_key, content_type, bytes, coalesce(width, 0),
	coalesce(height, 0), sha256, coalesce(crc32, 0), created_at`

func scanArtifact(row pgx.Row) (*jobs.Artifact, error) {
	var a jobs.Artifact
	var crc int64
	err := row.Scan(&a.ID, &a.JobID, &a.Kind, &a.Name, &a.Seq, &a.ObjectKey, &a.ContentType, &a.Bytes,
		&a.Width, &a.Height, &a.SHA256, &crc, &a.CreatedAt)
	a.CRC32 = uint32(crc)
	return &a, err
}

// ListArtifacts implements web.BatchReader.
func (s *Store) ListArtifacts(ctx context.Context, jobID string) ([]*jobs.Artifact, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+artifactColumns+` FROM artifacts WHERE job_id = $1 ORDER BY kind, seq, name`, jobID)
	if err != nil {
		return nil, fmt.Errorf("list artifacts: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*jobs.Artifact, error) { return scanArtifact(r) })
}

// FirstScreenshots implements web.BatchReader.
func (s *Store) FirstScreenshots(ctx context.Context, jobIDs []string) (map[string]*jobs.Artifact, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.*, t.object_key, t.content_type, t.bytes, t.width, t.height
		FROM (SELECT DISTINCT ON (job_id) `+artifactColumns+` FROM artifacts
		      WHERE job_id = ANY($1::uuid[]) AND kind = $2 ORDER BY job_id, seq) a
		LEFT JOIN thumbnails t ON t.artifact_id = a.id`, jobIDs, jobs.KindScreenshot)
	if err != nil {
		return nil, fmt.Errorf("first screenshots: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*jobs.Artifact, error) { return scanArtifactThumbnail(r) })
	if err != nil {
		return nil, fmt.Errorf("first screenshots: %w", err)
	}
	out := make(map[string]*jobs.Artifact, len(list))
	for _, a := range list {
		out[a.JobID] = a
	}
	return out, nil
}

// GetArtifact implements web.BatchReader.
func (s *Store) GetArtifact(ctx context.Context, id string) (*jobs.Artifact, error) {
	a, err := scanArtifact(s.pool.QueryRow(ctx, `SELECT `+artifactColumns+` FROM artifacts WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get artifact %s: %w", id, err)
	}
	return a, nil
}

// CompleteJob is CompleteAttempt without the settlement: ok=false means
// another attempt owns the job now.
func (s *Store) CompleteJob(ctx context.Context, id string, attempt int, result *jobs.Result, arts []*jobs.Artifact) (bool, error) {
	settled, err := s.CompleteAttempt(ctx, id, attempt, result, arts)
	return settled.Current, err
}

// artifactInsertError wraps a failed insert of the artifact (what) name; the
// unique violation of (job_id, name) is jobs.ErrArtifactNameTaken.
func artifactInsertError(what, name string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgerrUniqueViolation && pe.ConstraintName == "artifacts_job_id_name_key" {
		return fmt.Errorf("insert %s %s: %w: %w", what, name, jobs.ErrArtifactNameTaken, err)
	}
	return fmt.Errorf("insert %s %s: %w", what, name, err)
}

// pgerrUniqueViolation is Postgres's SQLSTATE unique_violation.
const pgerrUniqueViolation = "23505"

// FailJob implements jobs.ReconcileStore: FailAttempt without checkpoints or
// the settlement.
func (s *Store) FailJob(ctx context.Context, id string, attempt int, e jobs.JobError, result *jobs.Result, final bool) error {
	_, err := s.FailAttempt(ctx, id, attempt, e, result, final, nil)
	return err
}

// FailJobWithArtifacts is FailJob with final=true that also replaces the
// job's artifact rows with arts, in the same transaction.
func (s *Store) FailJobWithArtifacts(ctx context.Context, id string, attempt int, e jobs.JobError, result *jobs.Result, arts []*jobs.Artifact) error {
	if arts == nil {
		arts = []*jobs.Artifact{}
	}
	_, err := s.FailAttempt(ctx, id, attempt, e, result, true, arts)
	return err
}

// CancelBatch implements jobs.BatchStore.
func (s *Store) CancelBatch(ctx context.Context, id string) ([]string, error) {
	var ids []string
	var changed []jobChanged
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids, changed = nil, nil
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM batches WHERE id = $1)`, id).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return jobs.ErrNotFound
		}
		rows, err := tx.Query(ctx, `UPDATE jobs SET status = 'canceled', error_code = 'canceled',
			error_message = 'the batch was canceled before this job started', finished_at = now(), updated_at = now()
			WHERE batch_id = $1 AND status = 'queued' RETURNING id, name, url, attempts, error_message`, id)
		if err != nil {
			return err
		}
		for rows.Next() {
			c := jobChanged{status: string(jobs.StatusCanceled), err: &jobs.JobError{Code: "canceled"}}
			if err := rows.Scan(&c.id, &c.name, &c.url, &c.attempt, &c.err.Message); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, c.id)
			changed = append(changed, c)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return finishBatch(ctx, tx, id)
	})
	if err == nil {
		s.publishJobs(ctx, id, changed...)
	}
	return ids, err
}

// Unfinished implements jobs.ReconcileStore.
func (s *Store) Unfinished(ctx context.Context, before time.Time, limit int) ([]jobs.JobRef, error) {
	// Held jobs (dispatched_at NULL) are the dispatcher's, not the reconciler's.
	rows, err := s.pool.Query(ctx, `SELECT id, status, updated_at FROM jobs
		WHERE status IN ('queued', 'running') AND dispatched_at IS NOT NULL AND updated_at < $1
		ORDER BY updated_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list unfinished jobs: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobs.JobRef, error) {
		var ref jobs.JobRef
		err := r.Scan(&ref.ID, &ref.Status, &ref.UpdatedAt)
		return ref, err
	})
}

// Requeue implements jobs.ReconcileStore.
func (s *Store) Requeue(ctx context.Context, id string) error {
	c := jobChanged{id: id, status: string(jobs.StatusQueued)}
	var batchID string
	err := s.pool.QueryRow(ctx, `UPDATE jobs SET status = 'queued', updated_at = now() WHERE id = $1 AND status = 'running'
		RETURNING batch_id, name, url, attempts`, id).Scan(&batchID, &c.name, &c.url, &c.attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	s.publishJobs(ctx, batchID, c)
	return nil
}

// finishBatch stamps finished_at once no job of the batch is left unfinished
// and, in the same transaction, creates the batch's webhook delivery.
//
// The batch row is locked first: two jobs finishing at once in two
// transactions would otherwise each still see the other running (READ
// COMMITTED snapshots) and neither would finish the batch. With the lock, the
// second one's check starts after the first committed and sees both.
func finishBatch(ctx context.Context, tx pgx.Tx, batchID string) error {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM batches WHERE id = $1 FOR UPDATE`, batchID); err != nil {
		return fmt.Errorf("lock batch %s: %w", batchID, err)
	}
	tag, err := tx.Exec(ctx, `UPDATE batches SET finished_at = now() WHERE id = $1 AND finished_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE batch_id = $1 AND status IN ('queued', 'running'))`, batchID)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	return createCompletionDelivery(ctx, tx, batchID)
}
