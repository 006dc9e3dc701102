package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/session"
)

var _ session.Repo = (*Store)(nil)

const sessionColumns = `id, owner, status, worker_id, options, commands, created_at, last_active_at, expires_at,
	closed_at, close_reason`

func scanSession(row pgx.Row) (*session.Session, error) {
	var s session.Session
	var opts []byte
	err := row.Scan(&s.ID, &s.Owner, &s.Status, &s.WorkerID, &opts, &s.Commands, &s.CreatedAt, &s.LastActiveAt,
		&s.ExpiresAt, &s.ClosedAt, &s.CloseReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(opts, &s.Options); err != nil {
		return nil, fmt.Errorf("session %s options: %w", s.ID, err)
	}
	return &s, nil
}

// CreateSession implements session.Repo: the owner's lock makes the counts and the
// insert one step.
func (s *Store) CreateSession(ctx context.Context, ss *session.Session, perKey, maxInFlight int) error {
	opts, err := json.Marshal(ss.Options)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockOwner(ctx, tx, ss.Owner); err != nil {
			return err
		}
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE owner = $1 AND status IN ('opening', 'open')`,
			ss.Owner).Scan(&live); err != nil {
			return err
		}
		if perKey > 0 && live >= perKey {
			return fmt.Errorf("%w: %d open, the limit", session.ErrTooManySessions, live)
		}
		if err := checkInFlight(ctx, tx, ss.Owner, 1, maxInFlight); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO sessions (id, owner, status, options, created_at, last_active_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $5, $6)`, ss.ID, ss.Owner, ss.Status, opts, ss.CreatedAt, ss.ExpiresAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("create session: %w", unavailable(err))
	}
	return nil
}

// GetSession implements session.Repo.
func (s *Store) GetSession(ctx context.Context, id string) (*session.Session, error) {
	ss, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if err != nil && !errors.Is(err, jobs.ErrNotFound) {
		return nil, fmt.Errorf("get session %s: %w", id, unavailable(err))
	}
	return ss, err
}

func (s *Store) listSessions(ctx context.Context, query string, args ...any) ([]*session.Session, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", unavailable(err))
	}
	defer rows.Close()
	var out []*session.Session
	for rows.Next() {
		ss, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ss)
	}
	return out, rows.Err()
}

// ListSessions implements session.Repo: the owner's newest first (jobs.AnyOwner: all).
func (s *Store) ListSessions(ctx context.Context, owner string, limit int) ([]*session.Session, error) {
	return s.listSessions(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE ($1 = '*' OR owner = $1)
		ORDER BY created_at DESC LIMIT $2`, ownerFilter(owner), limit)
}

// ownerFilter is owner for the list query; "*" for jobs.AnyOwner.
func ownerFilter(owner string) string {
	if owner == jobs.AnyOwner {
		return "*"
	}
	return owner
}

// LiveSessions implements session.Repo.
func (s *Store) LiveSessions(ctx context.Context) ([]*session.Session, error) {
	return s.listSessions(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE status IN ('opening', 'open')`)
}

// MarkSessionOpen implements session.Repo.
func (s *Store) MarkSessionOpen(ctx context.Context, id, worker string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET status = 'open', worker_id = $2, last_active_at = now()
		WHERE id = $1 AND status = 'opening'`, id, worker)
	if err != nil {
		return false, fmt.Errorf("mark session %s open: %w", id, unavailable(err))
	}
	return tag.RowsAffected() == 1, nil
}

// TouchSession implements session.Repo.
func (s *Store) TouchSession(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE sessions SET commands = commands + 1, last_active_at = now() WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("touch session %s: %w", id, unavailable(err))
	}
	return nil
}

// EndSession implements session.Repo.
func (s *Store) EndSession(ctx context.Context, id, status, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET status = $2, close_reason = $3, closed_at = now()
		WHERE id = $1 AND status IN ('opening', 'open')`, id, status, reason)
	if err != nil {
		return false, fmt.Errorf("end session %s: %w", id, unavailable(err))
	}
	return tag.RowsAffected() == 1, nil
}

// AddSessionArtifact implements session.Repo (a name stored again is replaced).
func (s *Store) AddSessionArtifact(ctx context.Context, id string, a session.Artifact) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO session_artifacts (session_id, name, kind, key, content_type, bytes)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session_id, name) DO UPDATE
		SET kind = EXCLUDED.kind, key = EXCLUDED.key, content_type = EXCLUDED.content_type, bytes = EXCLUDED.bytes`,
		id, a.Name, a.Kind, a.Key, a.ContentType, a.Size)
	if err != nil {
		return fmt.Errorf("add session artifact: %w", unavailable(err))
	}
	return nil
}

// GetSessionArtifact implements session.Repo.
func (s *Store) GetSessionArtifact(ctx context.Context, id, name string) (*session.Artifact, error) {
	var a session.Artifact
	err := s.pool.QueryRow(ctx, `SELECT name, kind, key, content_type, bytes FROM session_artifacts
		WHERE session_id = $1 AND name = $2`, id, name).Scan(&a.Name, &a.Kind, &a.Key, &a.ContentType, &a.Size)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get session artifact: %w", unavailable(err))
	}
	return &a, nil
}
