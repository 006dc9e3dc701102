package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

var _ authprofile.Repository = (*Store)(nil)

// keptAuthStates is how many logins of a profile are kept (the newest).
const keptAuthStates = 5

const authProfileCols = `p.id, p.owner, p.name, p.origins, p.spec, p.secret_names, p.secrets, p.version,
	p.last_login_at, p.last_failure_at, coalesce(p.last_failure, ''), p.last_log,
	coalesce(p.last_test_id::text, ''), coalesce(p.last_test_error, ''), p.created_at, p.updated_at`

func scanAuthProfile(row pgx.Row) (*authprofile.Profile, error) {
	var (
		p         authprofile.Profile
		spec, log []byte
	)
	err := row.Scan(&p.ID, &p.Owner, &p.Name, &p.Origins, &spec, &p.SecretNames, &p.SealedSecrets, &p.Version,
		&p.LastLoginAt, &p.LastFailureAt, &p.LastFailure, &log, &p.LastTestID, &p.LastTestError, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(spec, &p.Spec); err != nil {
		return nil, fmt.Errorf("auth profile %s spec: %w", p.ID, err)
	}
	if len(log) > 0 {
		_ = json.Unmarshal(log, &p.LastLog)
	}
	return &p, nil
}

func nameTaken(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgerrUniqueViolation && pe.ConstraintName == "auth_profiles_owner_name_key" {
		return authprofile.ErrNameTaken
	}
	return err
}

// CreateAuthProfile implements authprofile.Repository.
func (s *Store) CreateAuthProfile(ctx context.Context, p *authprofile.Profile, state []byte) error {
	spec, err := json.Marshal(p.Spec)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO auth_profiles (id, owner, name, origins, spec, secret_names, secrets, version,
			last_login_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
			p.ID, p.Owner, p.Name, p.Origins, spec, p.SecretNames, p.SealedSecrets, p.Version, p.LastLoginAt, p.CreatedAt)
		if err != nil {
			return nameTaken(err)
		}
		if state != nil {
			_, err = tx.Exec(ctx, `INSERT INTO auth_profile_states (profile_id, version, state, source) VALUES ($1, 1, $2, $3)`,
				p.ID, state, authprofile.SourceUpload)
		}
		return err
	})
}

// GetAuthProfile implements authprofile.Repository.
func (s *Store) GetAuthProfile(ctx context.Context, id string) (*authprofile.Profile, error) {
	return scanAuthProfile(s.pool.QueryRow(ctx, `SELECT `+authProfileCols+` FROM auth_profiles p WHERE p.id = $1`, id))
}

// AuthProfileOfBatch implements authprofile.Repository.
func (s *Store) AuthProfileOfBatch(ctx context.Context, batchID, name string) (*authprofile.Profile, error) {
	return scanAuthProfile(s.pool.QueryRow(ctx, `SELECT `+authProfileCols+` FROM auth_profiles p
		JOIN batches b ON p.owner = coalesce(b.api_key_id::text, '') WHERE b.id = $1 AND p.name = $2`, batchID, name))
}

// ListAuthProfiles implements authprofile.Repository (by name).
func (s *Store) ListAuthProfiles(ctx context.Context, owner string) ([]*authprofile.Profile, error) {
	q := `SELECT ` + authProfileCols + ` FROM auth_profiles p WHERE p.owner = $1 OR $1 = '*' ORDER BY p.name, p.id`
	rows, err := s.pool.Query(ctx, q, owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*authprofile.Profile{}
	for rows.Next() {
		p, err := scanAuthProfile(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// UpdateAuthProfile implements authprofile.Repository.
func (s *Store) UpdateAuthProfile(ctx context.Context, p *authprofile.Profile) error {
	spec, err := json.Marshal(p.Spec)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `UPDATE auth_profiles SET name = $2, origins = $3, spec = $4, secret_names = $5,
		secrets = $6, updated_at = $7 WHERE id = $1`, p.ID, p.Name, p.Origins, spec, p.SecretNames, p.SealedSecrets, p.UpdatedAt)
	if err != nil {
		return nameTaken(err)
	}
	if tag.RowsAffected() == 0 {
		return jobs.ErrNotFound
	}
	return nil
}

// DeleteAuthProfile implements authprofile.Repository.
func (s *Store) DeleteAuthProfile(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM auth_profiles WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return jobs.ErrNotFound
	}
	return nil
}

// AddAuthState implements authprofile.Repository; after < 0 adds after
// whatever is current (an upload).
func (s *Store) AddAuthState(ctx context.Context, id string, after int, sealed []byte, source string,
	log []capture.LogEntry) (version int, added bool, err error) {
	var logJSON []byte
	if log != nil {
		if logJSON, err = json.Marshal(log); err != nil {
			return 0, false, err
		}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var cur int
		if err := tx.QueryRow(ctx, `SELECT version FROM auth_profiles WHERE id = $1 FOR UPDATE`, id).Scan(&cur); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return jobs.ErrNotFound
			}
			return err
		}
		if after >= 0 && cur != after {
			version = cur
			return nil
		}
		version, added = cur+1, true
		if _, err := tx.Exec(ctx, `INSERT INTO auth_profile_states (profile_id, version, state, source) VALUES ($1, $2, $3, $4)`,
			id, version, sealed, source); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM auth_profile_states WHERE profile_id = $1 AND version <= $2`,
			id, version-keptAuthStates); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE auth_profiles SET version = $2, last_login_at = now(),
			last_log = coalesce($3, last_log) WHERE id = $1`, id, version, logJSON)
		return err
	})
	return version, added, err
}

// AuthState implements authprofile.Repository.
func (s *Store) AuthState(ctx context.Context, id string) (int, []byte, time.Time, error) {
	var (
		v       int
		sealed  []byte
		created time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT st.version, st.state, st.created_at FROM auth_profiles p
		JOIN auth_profile_states st ON st.profile_id = p.id AND st.version = p.version WHERE p.id = $1`, id).Scan(&v, &sealed, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, time.Time{}, nil
	}
	return v, sealed, created, err
}

// RecordAuthFailure implements authprofile.Repository.
func (s *Store) RecordAuthFailure(ctx context.Context, id, message string, log []capture.LogEntry) error {
	var logJSON []byte
	if log != nil {
		var err error
		if logJSON, err = json.Marshal(log); err != nil {
			return err
		}
	}
	_, err := s.pool.Exec(ctx, `UPDATE auth_profiles SET last_failure_at = now(), last_failure = $2,
		last_log = coalesce($3, last_log) WHERE id = $1`, id, message, logJSON)
	return err
}

// RecordAuthTest implements authprofile.Repository.
func (s *Store) RecordAuthTest(ctx context.Context, id, testID, failure string, log []capture.LogEntry) error {
	var logJSON []byte
	if log != nil {
		var err error
		if logJSON, err = json.Marshal(log); err != nil {
			return err
		}
	}
	_, err := s.pool.Exec(ctx, `UPDATE auth_profiles SET last_test_id = $2, last_test_error = $3,
		last_log = coalesce($4, last_log) WHERE id = $1`, id, testID, failure, logJSON)
	return err
}

// CountAuthProfiles counts owner's profiles (authprofile's per-key cap).
func (s *Store) CountAuthProfiles(ctx context.Context, owner string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM auth_profiles WHERE owner = $1`, owner).Scan(&n)
	return n, err
}
