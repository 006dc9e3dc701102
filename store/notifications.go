package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// A run's notifications (notify.Planner, notify.Handler): decided once when
// the run settles, then delivered by tasks that record each attempt.

const notificationColumns = `id, run_id, channel_id, kind, reason, status, attempts, last_error, created_at, updated_at, delivered_at, message`

func scanNotification(row pgx.Row) (*regression.Notification, error) {
	var n regression.Notification
	err := row.Scan(&n.ID, &n.RunID, &n.ChannelID, &n.Kind, &n.Reason, &n.Status, &n.Attempts, &n.LastError,
		&n.CreatedAt, &n.UpdatedAt, &n.DeliveredAt, &n.Message)
	return &n, err
}

// notifications lists a run's notifications, oldest first.
func (s *Store) notifications(ctx context.Context, runID string) ([]*regression.Notification, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE run_id = $1 ORDER BY created_at, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("list notifications of run %s: %w", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Notification, error) { return scanNotification(r) })
	if err != nil {
		return nil, fmt.Errorf("list notifications of run %s: %w", runID, err)
	}
	return out, nil
}

// PreviousRunStatus is the status of the newest settled run of the run's
// suite and branch started before it ("" when there is none).
func (s *Store) PreviousRunStatus(ctx context.Context, r *regression.Run) (regression.RunStatus, error) {
	var status string
	err := s.pool.QueryRow(ctx, `SELECT status FROM runs WHERE suite_id = $1 AND branch = $2 AND id < $3
		AND status <> 'running' ORDER BY id DESC LIMIT 1`, r.SuiteID, r.Branch, r.ID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("previous run of %s: %w", r.ID, err)
	}
	return regression.RunStatus(status), nil
}

// PlanNotifications records a settled run's notifications once: the first
// call inserts ns and marks the run decided; later calls insert nothing.
// It returns the run's pending notifications.
func (s *Store) PlanNotifications(ctx context.Context, runID string, ns []*regression.Notification) ([]*regression.Notification, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var planned *time.Time
		if err := tx.QueryRow(ctx, `SELECT notify_planned_at FROM runs WHERE id = $1 FOR UPDATE`, runID).Scan(&planned); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return jobs.ErrNotFound
			}
			return fmt.Errorf("lock run %s: %w", runID, err)
		}
		if planned != nil {
			return nil
		}
		for _, n := range ns {
			if _, err := tx.Exec(ctx, `INSERT INTO notifications (id, run_id, channel_id, kind, reason, message)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id, channel_id) DO NOTHING`,
				n.ID, runID, n.ChannelID, n.Kind, n.Reason, n.Message); err != nil {
				return fmt.Errorf("insert notification: %w", err)
			}
		}
		_, err := tx.Exec(ctx, `UPDATE runs SET notify_planned_at = now() WHERE id = $1`, runID)
		return err
	})
	if err != nil {
		return nil, err
	}
	all, err := s.notifications(ctx, runID)
	if err != nil {
		return nil, err
	}
	var pending []*regression.Notification
	for _, n := range all {
		if n.Status == regression.NotificationPending {
			pending = append(pending, n)
		}
	}
	return pending, nil
}

// UnplannedRuns lists settled runs, finished between after and before,
// whose notifications were not decided yet.
func (s *Store) UnplannedRuns(ctx context.Context, after, before time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM runs WHERE notify_planned_at IS NULL AND finished_at IS NOT NULL
		AND finished_at > $1 AND finished_at < $2 ORDER BY finished_at LIMIT $3`, after, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list unplanned runs: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// GetNotification returns one notification, or jobs.ErrNotFound.
func (s *Store) GetNotification(ctx context.Context, id string) (*regression.Notification, error) {
	n, err := scanNotification(s.pool.QueryRow(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get notification %s: %w", id, err)
	}
	return n, nil
}

// RecordNotificationAttempt counts one attempt of a pending notification and
// sets its status and last error. ok=false: it was not pending.
func (s *Store) RecordNotificationAttempt(ctx context.Context, id, status, lastErr string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE notifications SET attempts = attempts + 1, status = $2, last_error = $3,
		updated_at = now(), delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
		WHERE id = $1 AND status = 'pending'`, id, status, lastErr)
	if err != nil {
		return false, fmt.Errorf("record attempt of notification %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// PendingNotifications lists pending notifications not updated since before.
func (s *Store) PendingNotifications(ctx context.Context, before time.Time, limit int) ([]*regression.Notification, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE status = 'pending'
		AND updated_at < $1 ORDER BY updated_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list pending notifications: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Notification, error) { return scanNotification(r) })
}

// FailNotification marks a pending notification failed without counting an
// attempt (the queue gave up on it).
func (s *Store) FailNotification(ctx context.Context, id, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE notifications SET status = 'failed', last_error = $2, updated_at = now()
		WHERE id = $1 AND status = 'pending'`, id, reason)
	if err != nil {
		return false, fmt.Errorf("fail notification %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ClaimMail implements notify.Store: under a lock per suite owner, email
// notification id takes one unit of its suite's and its owner's mail budgets
// (notifications that claimed within window), unless it claimed before.
func (s *Store) ClaimMail(ctx context.Context, id string, perSuite, perKey int, window time.Duration) (string, error) {
	spent := ""
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var suiteID, owner string
		var claimed *time.Time
		err := tx.QueryRow(ctx, `SELECT r.suite_id, coalesce(su.api_key_id::text, ''), n.mail_claimed_at
			FROM notifications n JOIN runs r ON r.id = n.run_id JOIN suites su ON su.id = r.suite_id WHERE n.id = $1`, id).
			Scan(&suiteID, &owner, &claimed)
		if errors.Is(err, pgx.ErrNoRows) {
			return jobs.ErrNotFound
		}
		if err != nil || claimed != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('snapq.mail:' || $1::text, 0))`, owner); err != nil {
			return err
		}
		var bySuite, byKey int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE r.suite_id = $1), count(*)
			FROM notifications n JOIN runs r ON r.id = n.run_id JOIN suites su ON su.id = r.suite_id
			WHERE n.mail_claimed_at > now() - make_interval(secs => $3) AND coalesce(su.api_key_id::text, '') = $2`,
			suiteID, owner, window.Seconds()).Scan(&bySuite, &byKey); err != nil {
			return err
		}
		switch {
		case bySuite >= perSuite:
			spent = fmt.Sprintf("the suite sent %d emails in the last %s (SNAPQ_SMTP_MAX_PER_SUITE=%d)", bySuite, window, perSuite)
		case byKey >= perKey:
			spent = fmt.Sprintf("the API key's suites sent %d emails in the last %s (SNAPQ_SMTP_MAX_PER_KEY=%d)", byKey, window, perKey)
		default:
			_, err = tx.Exec(ctx, `UPDATE notifications SET mail_claimed_at = now() WHERE id = $1`, id)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("claim mail budget for notification %s: %w", id, err)
	}
	return spent, nil
}
