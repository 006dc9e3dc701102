package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Visual regression: suites, runs, comparisons and baselines (regression's stores).

const suiteColumns = `s.id, coalesce(s.api_key_id::text, ''), s.name, s.spec, s.schedule_cron, s.schedule_tz,
	s.enabled, s.webhook_url, s.webhook_secret, s.created_at, s.updated_at,
	lr.id, lr.status, lr.created_at, lr.finished_at, k.revoked_at IS NOT NULL, s.vcs, s.vcs_token,
	s.vcs_token_sealed, s.notify, s.notify_sealed, s.webhook_secret_sealed`

const suiteFrom = ` FROM suites s LEFT JOIN LATERAL (SELECT id, status, created_at, finished_at FROM runs
	WHERE suite_id = s.id ORDER BY id DESC LIMIT 1) lr ON true
	LEFT JOIN api_keys k ON k.id = s.api_key_id`

func (st *Store) scanSuite(row pgx.Row) (*regression.Suite, error) {
	var s regression.Suite
	var spec []byte
	var cron, tz, hookURL, hookSecret, runID, runStatus *string
	var runCreated *time.Time
	var runFinished *time.Time
	var vcs []byte
	var vcsToken *string
	var vcsSealed, notify, notifySealed, hookSealed []byte
	err := row.Scan(&s.ID, &s.OwnerKeyID, &s.Name, &spec, &cron, &tz, &s.Enabled, &hookURL, &hookSecret,
		&s.CreatedAt, &s.UpdatedAt, &runID, &runStatus, &runCreated, &runFinished, &s.OwnerRevoked, &vcs, &vcsToken,
		&vcsSealed, &notify, &notifySealed, &hookSealed)
	if err != nil {
		return nil, err
	}
	if err := st.openSuiteSecrets(&s, vcs, deref(vcsToken), vcsSealed, notify, notifySealed); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(spec, &s.Spec); err != nil {
		return nil, fmt.Errorf("suite %s spec: %w", s.ID, err)
	}
	if cron != nil {
		s.Schedule = &regression.Schedule{Cron: *cron, Timezone: deref(tz)}
	}
	if hookURL != nil {
		secret, err := st.openWebhookSecret(hookSecret, hookSealed, suiteHookAAD(s.ID))
		if err != nil {
			s.SecretsErr = errors.Join(s.SecretsErr, fmt.Errorf("the webhook secret: %w", err))
		}
		s.Webhook = &jobs.Webhook{URL: *hookURL, Secret: secret, Event: regression.EventRunCompleted}
	}
	if runID != nil {
		s.LastRun = &regression.Run{ID: *runID, SuiteID: s.ID, Status: regression.RunStatus(deref(runStatus)), CreatedAt: *runCreated, FinishedAt: runFinished}
	}
	return &s, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func suiteArgs(s *regression.Suite) (spec []byte, cron, tz, hookURL *string, err error) {
	spec, err = json.Marshal(s.Spec)
	if s.Schedule != nil {
		cron, tz = &s.Schedule.Cron, &s.Schedule.Timezone
	}
	if s.Webhook != nil {
		hookURL = &s.Webhook.URL
	}
	return spec, cron, tz, hookURL, err
}

// CreateSuite implements regression.SuiteStore.
func (s *Store) CreateSuite(ctx context.Context, su *regression.Suite, maxPerOwner int) error {
	spec, cron, tz, hookURL, err := suiteArgs(su)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if maxPerOwner > 0 && su.OwnerKeyID != "" {
			if err := lockOwner(ctx, tx, su.OwnerKeyID); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM suites WHERE api_key_id = $1`, su.OwnerKeyID).Scan(&n); err != nil {
				return fmt.Errorf("count suites: %w", err)
			}
			if n >= maxPerOwner {
				return fmt.Errorf("%w: it has %d, the limit is %d; delete one first", regression.ErrTooManySuites, n, maxPerOwner)
			}
		}
		sec, err := s.sealSuiteSecrets(su)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO suites (id, api_key_id, name, spec, schedule_cron, schedule_tz, enabled,
			webhook_url, webhook_secret, created_at, updated_at, vcs, vcs_token, vcs_token_sealed, notify, notify_sealed,
			webhook_secret_sealed)
			VALUES ($1, NULLIF($2, '')::uuid, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, $13, $14, $15, $16)`,
			su.ID, su.OwnerKeyID, su.Name, spec, cron, tz, su.Enabled, hookURL, sec.hookPlain, su.CreatedAt, su.UpdatedAt,
			sec.vcs, sec.vcsSealed, sec.notify, sec.notifySealed, sec.hookSealed)
		if err != nil {
			return fmt.Errorf("insert suite: %w", err)
		}
		return nil
	})
}

// GetSuite implements regression.SuiteStore.
func (s *Store) GetSuite(ctx context.Context, id string) (*regression.Suite, error) {
	su, err := s.scanSuite(s.pool.QueryRow(ctx, `SELECT `+suiteColumns+suiteFrom+` WHERE s.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get suite %s: %w", id, err)
	}
	return su, nil
}

// ListSuites implements regression.Reader.
func (s *Store) ListSuites(ctx context.Context, owner string, limit int, cursor string) ([]*regression.Suite, string, error) {
	args := []any{limit + 1}
	var conds []string
	if owner != jobs.AnyOwner {
		args = append(args, owner)
		conds = append(conds, fmt.Sprintf(`coalesce(s.api_key_id::text, '') = $%d`, len(args)))
	}
	if cursor != "" {
		args = append(args, cursor)
		conds = append(conds, fmt.Sprintf(`s.id < $%d`, len(args)))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	rows, err := s.pool.Query(ctx, `SELECT `+suiteColumns+suiteFrom+where+` ORDER BY s.id DESC LIMIT $1`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list suites: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Suite, error) { return s.scanSuite(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list suites: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// UpdateSuite implements regression.SuiteStore.
func (s *Store) UpdateSuite(ctx context.Context, su *regression.Suite) error {
	spec, cron, tz, hookURL, err := suiteArgs(su)
	if err != nil {
		return err
	}
	sec, err := s.sealSuiteSecrets(su)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE suites SET name = $2, spec = $3, schedule_cron = $4, schedule_tz = $5,
		enabled = $6, webhook_url = $7, webhook_secret = $8, updated_at = $9, vcs = $10, vcs_token = NULL,
		vcs_token_sealed = $11, notify = $12, notify_sealed = $13, webhook_secret_sealed = $14 WHERE id = $1`,
		su.ID, su.Name, spec, cron, tz, su.Enabled, hookURL, sec.hookPlain, su.UpdatedAt, sec.vcs, sec.vcsSealed,
		sec.notify, sec.notifySealed, sec.hookSealed)
	if err != nil {
		return fmt.Errorf("update suite %s: %w", su.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return jobs.ErrNotFound
	}
	return nil
}

// DeleteSuite implements regression.Reader. Its runs, comparisons and
// baselines go with it; the run batches and their artifacts stay.
func (s *Store) DeleteSuite(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM suites WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete suite %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return jobs.ErrNotFound
	}
	return nil
}

// ScheduledSuites implements regression.Schedules: a revoked key's suites
// are left out.
func (s *Store) ScheduledSuites(ctx context.Context) ([]*regression.Suite, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+suiteColumns+suiteFrom+
		` WHERE s.enabled AND s.schedule_cron IS NOT NULL AND k.revoked_at IS NULL ORDER BY s.id`)
	if err != nil {
		return nil, fmt.Errorf("list scheduled suites: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Suite, error) { return s.scanSuite(r) })
}

// CreateRun implements regression.SuiteStore.
func (s *Store) CreateRun(ctx context.Context, r *regression.Run, b *jobs.Batch, js []*jobs.Job, keys []regression.CaptureKey, maxInFlight int) error {
	spec, err := json.Marshal(r.Spec)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkInFlight(ctx, tx, b.OwnerKeyID, len(js), maxInFlight); err != nil {
			return err
		}
		if err := s.insertBatch(ctx, tx, b, js); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO runs (id, suite_id, batch_id, trigger, scheduled_for, status, spec, created_at,
			branch, base_branch, commit_sha, base_url, pull_request, dashboard_url, compare_to_base_url)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT (suite_id, scheduled_for) DO NOTHING`,
			r.ID, r.SuiteID, r.BatchID, r.Trigger, r.ScheduledFor, string(r.Status), spec, r.CreatedAt,
			r.Branch, r.BaseBranch, r.Commit, r.BaseURL, r.PullRequest, r.DashboardURL, r.CompareTo)
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return regression.ErrRunExists // rolls the batch back too
		}
		// Keys name their jobs (a pair run's: its capture and its reference
		// capture), else they pair with js by index.
		rows := make([][]any, len(keys))
		for i, k := range keys {
			id := k.JobID
			if id == "" {
				id = js[i].ID
			}
			var ref *string
			if k.ReferenceJobID != "" {
				ref = &k.ReferenceJobID
			}
			rows[i] = []any{id, r.ID, k.Target, k.Viewport, ref}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"run_captures"}, []string{"job_id", "run_id", "target", "viewport", "reference_job_id"},
			pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("insert run captures: %w", err)
		}
		for _, c := range r.Removed { // pages no longer discovered: no job
			if _, err := tx.Exec(ctx, `INSERT INTO comparisons (id, run_id, target, viewport, segment, status, message,
				baseline_id, baseline_artifact_id, diff_mode, hunks, checkpoint)
				VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, '')::uuid, $9, $10, $11, $12)`,
				c.ID, r.ID, c.Target, c.Viewport, c.Segment, string(c.Status), c.Message, c.BaselineID, artID(c.BaselineArtifact),
				diffMode(c.DiffMode), hunksOf(c), c.Checkpoint); err != nil {
				return fmt.Errorf("insert removed comparison: %w", err)
			}
		}
		return nil
	})
}

const runColumns = `r.id, r.suite_id, r.batch_id, r.trigger, r.scheduled_for, r.status, r.spec, r.created_at, r.finished_at,
	r.branch, r.base_branch, r.commit_sha, r.base_url, r.pull_request, r.dashboard_url, r.compare_to_base_url, r.vcs_check_run,
	(SELECT count(*) FROM run_captures rc WHERE rc.run_id = r.id AND rc.compared_at IS NULL),
	(SELECT count(*) FROM comparisons c WHERE c.run_id = r.id),
	(SELECT count(*) FROM comparisons c WHERE c.run_id = r.id AND c.status = 'passed'),
	(SELECT count(*) FROM comparisons c WHERE c.run_id = r.id AND c.status = 'failed'),
	(SELECT count(*) FROM comparisons c WHERE c.run_id = r.id AND c.status = 'new'),
	(SELECT count(*) FROM comparisons c WHERE c.run_id = r.id AND c.status = 'missing'),
	(SELECT count(*) FROM comparisons c WHERE c.run_id = r.id AND c.status = 'error'),
	(SELECT count(*) FROM comparisons c WHERE c.run_id = r.id AND c.status IN ('failed', 'new', 'missing')
		AND c.approved_at IS NULL)`

func scanRun(row pgx.Row) (*regression.Run, error) {
	var r regression.Run
	var spec []byte
	c := &r.Counts
	err := row.Scan(&r.ID, &r.SuiteID, &r.BatchID, &r.Trigger, &r.ScheduledFor, &r.Status, &spec, &r.CreatedAt,
		&r.FinishedAt, &r.Branch, &r.BaseBranch, &r.Commit, &r.BaseURL, &r.PullRequest, &r.DashboardURL,
		&r.CompareTo, &r.CheckRunID, &c.Pending, &c.Total, &c.Passed, &c.Failed, &c.New, &c.Missing, &c.Error,
		&c.ToReview)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(spec, &r.Spec); err != nil {
		return nil, fmt.Errorf("run %s spec: %w", r.ID, err)
	}
	return &r, nil
}

func (s *Store) getRunWhere(ctx context.Context, q pgx.Tx, cond string, arg any) (*regression.Run, error) {
	var row pgx.Row
	sql := `SELECT ` + runColumns + ` FROM runs r WHERE ` + cond
	if q != nil {
		row = q.QueryRow(ctx, sql, arg)
	} else {
		row = s.pool.QueryRow(ctx, sql, arg)
	}
	r, err := scanRun(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	return r, err
}

// GetRun implements regression.Reader.
func (s *Store) GetRun(ctx context.Context, id string) (*regression.Run, error) {
	r, err := s.getRunWhere(ctx, nil, `r.id = $1`, id)
	if err != nil {
		return nil, err
	}
	if r.Comparisons, err = s.comparisons(ctx, id); err != nil {
		return nil, err
	}
	r.Notifications, err = s.notifications(ctx, id)
	return r, err
}

// RunOfBatch implements regression.RunsOfBatches.
func (s *Store) RunOfBatch(ctx context.Context, batchID string) (*regression.Run, error) {
	return s.getRunWhere(ctx, nil, `r.batch_id = $1`, batchID)
}

// ListRuns implements regression.Reader.
func (s *Store) ListRuns(ctx context.Context, suiteID string, limit int, cursor string) ([]*regression.Run, string, error) {
	q := `SELECT ` + runColumns + ` FROM runs r WHERE r.suite_id = $1`
	args := []any{suiteID, limit + 1}
	if cursor != "" {
		q += ` AND r.id < $3`
		args = append(args, cursor)
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY r.id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Run, error) { return scanRun(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

const comparisonColumns = `id, run_id, coalesce(job_id::text, ''), target, viewport, segment, status, diff_pixels, diff_ratio, threshold,
	message, coalesce(baseline_id::text, ''), coalesce(baseline_artifact_id::text, ''),
	coalesce(current_artifact_id::text, ''), coalesce(diff_artifact_id::text, ''), approved_at, diff_mode, shifted_px, hunks,
	checkpoint, step, failed_step, group_key, matches_previous, auto_approved, rejected_at, rejected_by, masked_regions`

// comparisons loads a run's comparisons with their artifacts, in target,
// viewport and segment order.
func (s *Store) comparisons(ctx context.Context, runID string) ([]*regression.Comparison, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+comparisonColumns+` FROM comparisons WHERE run_id = $1
		ORDER BY `+comparisonOrder, runID)
	return s.scanComparisons(ctx, rows, err)
}

// CaptureOf implements regression.Captures: one query, without the run's counts.
func (s *Store) CaptureOf(ctx context.Context, jobID string) (*regression.Run, regression.CaptureKey, error) {
	var key regression.CaptureKey
	var r regression.Run
	var spec []byte
	err := s.pool.QueryRow(ctx, `SELECT r.id, r.suite_id, r.batch_id, r.trigger, r.scheduled_for, r.status, r.spec,
		r.created_at, r.finished_at, r.branch, r.base_branch, r.commit_sha, r.base_url, r.compare_to_base_url,
		rc.target, rc.viewport, rc.job_id::text, coalesce(rc.reference_job_id::text, '')
		FROM run_captures rc JOIN runs r ON r.id = rc.run_id WHERE rc.job_id = $1
		UNION ALL
		SELECT r.id, r.suite_id, r.batch_id, r.trigger, r.scheduled_for, r.status, r.spec,
		r.created_at, r.finished_at, r.branch, r.base_branch, r.commit_sha, r.base_url, r.compare_to_base_url,
		rc.target, rc.viewport, rc.job_id::text, rc.reference_job_id::text
		FROM run_captures rc JOIN runs r ON r.id = rc.run_id WHERE rc.reference_job_id = $1`, jobID).
		Scan(&r.ID, &r.SuiteID, &r.BatchID, &r.Trigger, &r.ScheduledFor, &r.Status, &spec, &r.CreatedAt, &r.FinishedAt,
			&r.Branch, &r.BaseBranch, &r.Commit, &r.BaseURL, &r.CompareTo, &key.Target, &key.Viewport, &key.JobID, &key.ReferenceJobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, key, jobs.ErrNotFound
	}
	if err != nil {
		return nil, key, fmt.Errorf("get run capture %s: %w", jobID, err)
	}
	if err := json.Unmarshal(spec, &r.Spec); err != nil {
		return nil, key, fmt.Errorf("run %s spec: %w", r.ID, err)
	}
	return &r, key, nil
}

// CaptureRun implements regression.CaptureRunReader: the run of a capture
// whose key the compare task carries (without its counts) and the capture
// job, in one round trip.
func (s *Store) CaptureRun(ctx context.Context, runID, jobID string) (*regression.Run, *jobs.Job, error) {
	var r regression.Run
	var spec []byte
	var j *jobs.Job
	b := &pgx.Batch{}
	b.Queue(`SELECT r.id, r.suite_id, r.batch_id, r.trigger, r.scheduled_for, r.status, r.spec,
		r.created_at, r.finished_at, r.branch, r.base_branch, r.commit_sha, r.base_url, r.compare_to_base_url
		FROM runs r WHERE r.id = $1`, runID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&r.ID, &r.SuiteID, &r.BatchID, &r.Trigger, &r.ScheduledFor, &r.Status, &spec, &r.CreatedAt,
			&r.FinishedAt, &r.Branch, &r.BaseBranch, &r.Commit, &r.BaseURL, &r.CompareTo)
	})
	b.Queue(`SELECT `+jobColumns+`, `+sharedOptionsColumn+` FROM jobs WHERE id = $1`, jobID).QueryRow(func(row pgx.Row) error {
		var err error
		j, err = scanJob(row, true, nil)
		return err
	})
	err := s.pool.SendBatch(ctx, b).Close()
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get run %s and capture %s: %w", runID, jobID, unavailable(err))
	}
	if err := json.Unmarshal(spec, &r.Spec); err != nil {
		return nil, nil, fmt.Errorf("run %s spec: %w", r.ID, err)
	}
	return &r, j, nil
}

const baselineColumns = `b.id, b.suite_id, b.target, b.viewport, b.segment, b.version, coalesce(b.artifact_id::text, ''),
	coalesce(b.run_id::text, ''), coalesce(b.restored_from::text, ''), b.approved_by, b.approved_at,
	b.version = (SELECT max(version) FROM baselines o WHERE o.suite_id = b.suite_id AND o.branch = b.branch
		AND o.target = b.target AND o.checkpoint = b.checkpoint AND o.viewport = b.viewport AND o.segment = b.segment),
	b.branch, b.checkpoint`

func (s *Store) scanBaselines(ctx context.Context, rows pgx.Rows, err error) ([]*regression.Baseline, error) {
	if err != nil {
		return nil, fmt.Errorf("list baselines: %w", err)
	}
	var artIDs []string
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Baseline, error) {
		var b regression.Baseline
		var art string
		err := r.Scan(&b.ID, &b.SuiteID, &b.Target, &b.Viewport, &b.Segment, &b.Version, &art, &b.RunID,
			&b.RestoredFrom, &b.ApprovedBy, &b.ApprovedAt, &b.Active, &b.Branch, &b.Checkpoint)
		artIDs = append(artIDs, art)
		return &b, err
	})
	if err != nil {
		return nil, fmt.Errorf("list baselines: %w", err)
	}
	arts, err := s.artifactsByID(ctx, artIDs)
	if err != nil {
		return nil, fmt.Errorf("load baseline artifacts: %w", err)
	}
	for i, b := range out {
		b.Artifact = arts[artIDs[i]]
	}
	return out, nil
}

// artifactsByID loads the artifacts named by ids ("" is skipped), with their
// thumbnails, in one query.
func (s *Store) artifactsByID(ctx context.Context, ids []string) (map[string]*jobs.Artifact, error) {
	want := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" {
			want = append(want, id)
		}
	}
	out := make(map[string]*jobs.Artifact, len(want))
	if len(want) == 0 {
		return out, nil
	}
	// With their thumbnails: a change group's representative diff shows as one.
	rows, err := s.pool.Query(ctx, `SELECT a.*, t.object_key, t.content_type, t.bytes, t.width, t.height
		FROM (SELECT `+artifactColumns+` FROM artifacts WHERE id = ANY($1::uuid[])) a
		LEFT JOIN thumbnails t ON t.artifact_id = a.id`, want)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*jobs.Artifact, error) { return scanArtifactThumbnail(r) })
	if err != nil {
		return nil, err
	}
	for _, a := range list {
		out[a.ID] = a
	}
	return out, nil
}

// ActiveBaselines implements regression.CompareStore.
// A segment's baseline is the newest version of the first branch that has
// one; a branch's removal of a segment hides its base's.
func (s *Store) ActiveBaselines(ctx context.Context, suiteID string, branches []string, key regression.CaptureKey) ([]*regression.Baseline, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+baselineColumns+` FROM (SELECT DISTINCT ON (checkpoint, segment) * FROM baselines
		WHERE suite_id = $1 AND target = $2 AND viewport = $3 AND branch = ANY($4::text[])
		ORDER BY checkpoint, segment, array_position($4::text[], branch), version DESC) b
		WHERE b.artifact_id IS NOT NULL ORDER BY b.checkpoint, b.segment`, suiteID, key.Target, key.Viewport, nonNil(branches))
	return s.scanBaselines(ctx, rows, err)
}

// BaselineVersions implements regression.CompareStore.
func (s *Store) BaselineVersions(ctx context.Context, suiteID string, branches []string, key regression.CaptureKey) ([]*regression.Baseline, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+baselineColumns+` FROM baselines b
		WHERE b.suite_id = $1 AND b.target = $2 AND b.viewport = $3 AND b.branch = ANY($4::text[]) AND b.artifact_id IS NOT NULL
		ORDER BY array_position($4::text[], b.branch), b.version DESC LIMIT 1000`, suiteID, key.Target, key.Viewport, nonNil(branches))
	return s.scanBaselines(ctx, rows, err)
}

// Reject implements regression.Reader.
func (s *Store) Reject(ctx context.Context, runID string, ids []string, by string) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE comparisons SET rejected_at = now(), rejected_by = $3
		WHERE run_id = $1 AND id = ANY($2::uuid[]) AND approved_at IS NULL AND rejected_at IS NULL
		AND status IN ('failed', 'new', 'missing')`, runID, nonNil(ids), by)
	if err != nil {
		return 0, fmt.Errorf("reject comparisons of run %s: %w", runID, err)
	}
	return int(tag.RowsAffected()), nil
}

// ListBaselines implements regression.Reader.
func (s *Store) ListBaselines(ctx context.Context, suiteID, branch string, history bool) ([]*regression.Baseline, error) {
	q := `SELECT ` + baselineColumns + ` FROM baselines b WHERE b.suite_id = $1 AND b.branch = $2`
	if !history {
		q = `SELECT ` + baselineColumns + ` FROM (SELECT DISTINCT ON (target, checkpoint, viewport, segment) * FROM baselines
			WHERE suite_id = $1 AND branch = $2 ORDER BY target, checkpoint, viewport, segment, version DESC) b WHERE b.artifact_id IS NOT NULL`
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY b.target, b.viewport, b.checkpoint, b.segment, b.version DESC`, suiteID, branch)
	return s.scanBaselines(ctx, rows, err)
}

// GetBaseline implements regression.Reader.
func (s *Store) GetBaseline(ctx context.Context, id string) (*regression.Baseline, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+baselineColumns+` FROM baselines b WHERE b.id = $1`, id)
	bs, err := s.scanBaselines(ctx, rows, err)
	if err != nil {
		return nil, err
	}
	if len(bs) == 0 {
		return nil, jobs.ErrNotFound
	}
	return bs[0], nil
}

// RecordComparisons implements regression.CompareStore.
func (s *Store) RecordComparisons(ctx context.Context, runID, jobID string, cs []*regression.Comparison, diffs []*jobs.Artifact) (bool, error) {
	finished := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status, batchID string
		if err := tx.QueryRow(ctx, `SELECT status, batch_id FROM runs WHERE id = $1 FOR UPDATE`, runID).
			Scan(&status, &batchID); err != nil {
			return fmt.Errorf("lock run %s: %w", runID, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM comparisons WHERE job_id = $1`, jobID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM artifacts WHERE job_id = $1 AND kind = $2`, jobID, regression.KindDiff); err != nil {
			return err
		}
		if err := insertDiffArtifacts(ctx, tx, diffs); err != nil {
			return err
		}
		if err := insertComparisons(ctx, tx, runID, jobID, cs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE run_captures SET compared_at = now() WHERE job_id = $1`, jobID); err != nil {
			return err
		}
		if regression.RunStatus(status) != regression.RunRunning {
			return nil
		}
		var err error
		finished, err = s.settleRun(ctx, tx, runID, batchID)
		return err
	})
	if err == nil {
		s.publishComparisons(ctx, runID, cs)
	}
	return finished, err
}

// insertDiffArtifacts writes a capture's diff images and their thumbnails.
func insertDiffArtifacts(ctx context.Context, tx pgx.Tx, diffs []*jobs.Artifact) error {
	if err := checkTombstones(ctx, tx, diffs); err != nil {
		return err
	}
	for _, a := range diffs {
		if _, err := tx.Exec(ctx, `INSERT INTO artifacts (id, job_id, kind, name, seq, object_key, content_type,
			bytes, width, height, sha256, crc32) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULLIF($12::bigint, 0))`,
			a.ID, a.JobID, a.Kind, a.Name, a.Seq, a.ObjectKey, a.ContentType, a.Bytes, a.Width, a.Height, a.SHA256, int64(a.CRC32)); err != nil {
			return artifactInsertError("diff artifact", a.Name, err)
		}
		if err := insertThumbnail(ctx, tx, a); err != nil {
			return err
		}
	}
	return nil
}

// insertComparisons writes a capture's comparisons.
func insertComparisons(ctx context.Context, tx pgx.Tx, runID, jobID string, cs []*regression.Comparison) error {
	for _, c := range cs {
		if _, err := tx.Exec(ctx, `INSERT INTO comparisons (id, run_id, job_id, target, viewport, segment, status,
			diff_pixels, diff_ratio, threshold, message, baseline_id, baseline_artifact_id, current_artifact_id,
			diff_artifact_id, diff_mode, shifted_px, hunks, checkpoint, step, failed_step, group_key, matches_previous,
			auto_approved, changes, masked_regions) VALUES ($1, $2, $3, $4, $5,
			$6, $7, $8, $9, $10, $11, NULLIF($12, '')::uuid, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)`, c.ID, runID,
			jobID, c.Target, c.Viewport, c.Segment, string(c.Status), c.DiffPixels, c.DiffRatio, c.Threshold, c.Message,
			c.BaselineID, artID(c.BaselineArtifact), artID(c.CurrentArtifact), artID(c.DiffArtifact),
			diffMode(c.DiffMode), c.ShiftedPx, hunksOf(c), c.Checkpoint, c.Step, c.FailedStep, c.GroupKey, c.MatchesPrevious,
			c.AutoApproved, changesOf(c), maskedOf(c)); err != nil {
			return fmt.Errorf("insert comparison: %w", err)
		}
	}
	return nil
}

// settleRun finishes a running run with nothing left to compare, with its
// status by its counts and its run.completed webhook delivery; true when it
// did.
func (s *Store) settleRun(ctx context.Context, tx pgx.Tx, runID, batchID string) (bool, error) {
	r, err := s.getRunWhere(ctx, tx, `r.id = $1`, runID)
	if err != nil {
		return false, err
	}
	if r.Counts.Pending > 0 {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET status = $2, finished_at = now() WHERE id = $1`,
		runID, string(regression.RunStatusOf(r.Counts))); err != nil {
		return false, fmt.Errorf("finish run %s: %w", runID, err)
	}
	return true, createDelivery(ctx, tx, batchID, regression.EventRunCompleted)
}

// diffMode is the stored mode: pixel unless the comparison says aligned.
func diffMode(m string) string {
	if m == regression.DiffAligned {
		return m
	}
	return regression.DiffPixel
}

// hunksOf is the comparison's hunks, [] for none.
func hunksOf(c *regression.Comparison) []regression.Hunk {
	if c.Hunks == nil {
		return []regression.Hunk{}
	}
	return c.Hunks
}

func artID(a *jobs.Artifact) *string {
	if a == nil {
		return nil
	}
	return &a.ID
}

// UncomparedCaptures implements regression.Uncompared.
func (s *Store) UncomparedCaptures(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT rc.job_id FROM run_captures rc JOIN jobs j ON j.id = rc.job_id
		WHERE rc.compared_at IS NULL AND j.status IN ('succeeded', 'failed', 'canceled') AND j.finished_at < $1
		AND (rc.reference_job_id IS NULL OR EXISTS (SELECT 1 FROM jobs rj WHERE rj.id = rc.reference_job_id
			AND rj.status IN ('succeeded', 'failed', 'canceled') AND rj.finished_at < $1))
		ORDER BY j.finished_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list uncompared captures: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Approve implements regression.Reader: regression.Approve's rules in one
// transaction (approvalTx).
func (s *Store) Approve(ctx context.Context, runID string, a regression.Approval, by string) (*regression.Run, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return regression.Approve(ctx, approvalTx{s: s, tx: tx}, runID, a, by)
	})
	if err != nil {
		return nil, err
	}
	return s.GetRunSummary(ctx, runID)
}

// statusStrings is statuses as SQL text values, never nil (an empty array, not NULL).
func statusStrings[S ~string](statuses []S) []string {
	out := make([]string, len(statuses))
	for i, s := range statuses {
		out[i] = string(s)
	}
	return out
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// RestoreBaseline implements regression.Reader.
func (s *Store) RestoreBaseline(ctx context.Context, id, by string) (*regression.Baseline, error) {
	newID := uuid.Must(uuid.NewV7()).String()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var suiteID string
		if err := tx.QueryRow(ctx, `SELECT suite_id FROM baselines WHERE id = $1`, id).Scan(&suiteID); errors.Is(err, pgx.ErrNoRows) {
			return jobs.ErrNotFound
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM suites WHERE id = $1 FOR UPDATE`, suiteID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO baselines (id, suite_id, target, viewport, segment, version, artifact_id,
			run_id, restored_from, approved_by, branch, checkpoint)
			SELECT $2::uuid, o.suite_id, o.target, o.viewport, o.segment,
				(SELECT max(version) + 1 FROM baselines m WHERE m.suite_id = o.suite_id AND m.branch = o.branch
					AND m.target = o.target AND m.checkpoint = o.checkpoint AND m.viewport = o.viewport AND m.segment = o.segment),
				o.artifact_id, o.run_id, o.id, $3::text, o.branch, o.checkpoint
			FROM baselines o WHERE o.id = $1`, id, newID, by)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("restore baseline %s: %w", id, err)
	}
	return s.GetBaseline(ctx, newID)
}

// MergeBranch implements regression.Reader: in one transaction, under the
// suite's lock (versions are numbered under it), every active baseline of
// branch, removals included, becomes the next version of base's, and the
// branch's baselines are deleted (comparisons keep their images).
func (s *Store) MergeBranch(ctx context.Context, suiteID, branch, base, by string) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM suites WHERE id = $1 FOR UPDATE`, suiteID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM (SELECT DISTINCT ON (target, checkpoint, viewport, segment) id FROM baselines
			WHERE suite_id = $1 AND branch = $2 ORDER BY target, checkpoint, viewport, segment, version DESC) b ORDER BY id`, suiteID, branch)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("list baselines of branch %q: %w", branch, err)
		}
		for _, id := range ids {
			if _, err := tx.Exec(ctx, `INSERT INTO baselines (id, suite_id, target, viewport, segment, version,
				artifact_id, run_id, approved_by, branch, checkpoint)
				SELECT $2::uuid, o.suite_id, o.target, o.viewport, o.segment,
					coalesce((SELECT max(version) FROM baselines m WHERE m.suite_id = o.suite_id AND m.branch = $3
						AND m.target = o.target AND m.checkpoint = o.checkpoint AND m.viewport = o.viewport
						AND m.segment = o.segment), 0) + 1,
					o.artifact_id, o.run_id, $4::text, $3::text, o.checkpoint
				FROM baselines o WHERE o.id = $1`, id, uuid.Must(uuid.NewV7()).String(), base, by); err != nil {
				return fmt.Errorf("promote baseline %s: %w", id, err)
			}
		}
		n = len(ids)
		_, err = tx.Exec(ctx, `DELETE FROM baselines WHERE suite_id = $1 AND branch = $2`, suiteID, branch)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("merge branch %q of suite %s: %w", branch, suiteID, err)
	}
	return n, nil
}

// VCSComment implements regression.VCSStore: the id of the comment the
// suite's runs edit on a pull request, "" before the first.
func (s *Store) VCSComment(ctx context.Context, suiteID string, pr int) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT comment_id FROM vcs_comments WHERE suite_id = $1 AND pull_request = $2`,
		suiteID, pr).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// SetVCSComment implements regression.VCSStore.
func (s *Store) SetVCSComment(ctx context.Context, suiteID string, pr int, id string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO vcs_comments (suite_id, pull_request, comment_id) VALUES ($1, $2, $3)
		ON CONFLICT (suite_id, pull_request) DO UPDATE SET comment_id = EXCLUDED.comment_id`, suiteID, pr, id)
	return err
}

// TargetHistory returns how each target of a suite came out of the suite's
// newest runs finished runs on one branch key (regression.MainLine for the
// main branch), each target's runs newest first.
func (s *Store) TargetHistory(ctx context.Context, suiteID, branch string, runs int) (map[string][]regression.TargetRun, error) {
	rows, err := s.pool.Query(ctx, `
		WITH recent AS (
			SELECT id, created_at FROM runs
			WHERE suite_id = $1 AND branch = $2 AND status <> 'running'
			ORDER BY id DESC LIMIT $3)
		SELECT c.target, r.id::text, r.created_at,
			max(CASE c.status WHEN 'error' THEN 5 WHEN 'failed' THEN 4 WHEN 'missing' THEN 3 WHEN 'new' THEN 2 ELSE 1 END),
			max(c.diff_ratio),
			bool_or(c.approved_at IS NOT NULL) AND bool_and(c.status = 'passed' OR c.approved_at IS NOT NULL)
		FROM recent r JOIN comparisons c ON c.run_id = r.id
		GROUP BY c.target, r.id, r.created_at
		ORDER BY c.target, r.id DESC`, suiteID, branch, runs)
	if err != nil {
		return nil, fmt.Errorf("target history: %w", err)
	}
	defer rows.Close()
	statuses := [...]regression.CompareStatus{1: regression.ComparePassed, 2: regression.CompareNew, 3: regression.CompareMissing,
		4: regression.CompareFailed, 5: regression.CompareError}
	out := map[string][]regression.TargetRun{}
	for rows.Next() {
		var target string
		var worst int
		var tr regression.TargetRun
		if err := rows.Scan(&target, &tr.RunID, &tr.CreatedAt, &worst, &tr.MaxRatio, &tr.Approved); err != nil {
			return nil, fmt.Errorf("target history: %w", err)
		}
		tr.Status = statuses[worst]
		out[target] = append(out[target], tr)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("target history: %w", err)
	}
	return out, nil
}
