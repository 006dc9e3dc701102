package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

var _ jobs.KeyStore = (*Store)(nil)

// CreateKey implements jobs.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k *jobs.APIKey) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, name, prefix, sha256, created_at) VALUES ($1, $2, $3, $4, $5)`,
		k.ID, k.Name, k.Prefix, k.SHA256, k.CreatedAt)
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	return nil
}

const keyColumns = `id, name, prefix, sha256, created_at, last_used_at, revoked_at`

func scanKey(row pgx.Row) (*jobs.APIKey, error) {
	var k jobs.APIKey
	err := row.Scan(&k.ID, &k.Name, &k.Prefix, &k.SHA256, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt)
	return &k, err
}

// ListKeys implements jobs.KeyStore.
func (s *Store) ListKeys(ctx context.Context) ([]*jobs.APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_at`)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*jobs.APIKey, error) { return scanKey(r) })
}

// RevokeKey implements jobs.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("api key %s: %w", id, jobs.ErrNotFound)
	}
	return nil
}

// KeyBySHA256 implements jobs.KeyStore.
func (s *Store) KeyBySHA256(ctx context.Context, sum string) (*jobs.APIKey, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE sha256 = $1 AND revoked_at IS NULL`, sum))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up api key: %w", err)
	}
	return k, nil
}

// TouchKey implements jobs.KeyStore: it records use at most once a minute.
func (s *Store) TouchKey(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, id)
	return err
}

// FindIdempotency implements jobs.BatchStore.
func (s *Store) FindIdempotency(ctx context.Context, owner, key string) (string, string, error) {
	var id, hash string
	err := s.pool.QueryRow(ctx, `SELECT batch_id, request_hash FROM idempotency_keys WHERE owner = $1 AND key = $2`,
		owner, key).Scan(&id, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", jobs.ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("find idempotency key: %w", err)
	}
	return id, hash, nil
}

// CountUnfinished implements jobs.BatchStore.
func (s *Store) CountUnfinished(ctx context.Context, owner string) (int, error) {
	return countUnfinished(ctx, s.pool, owner)
}

// rowQuerier is a pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// unfinishedOwnerSQL is countUnfinished's count for the owner of the batch
// row b of the statement it is part of (addCrawlPagesSQL).
const unfinishedOwnerSQL = `((SELECT count(*) FROM jobs uj JOIN batches ub ON ub.id = uj.batch_id
		WHERE ub.api_key_id = b.api_key_id AND uj.status IN ('queued', 'running'))
		+ (SELECT count(*) FROM sessions WHERE owner = b.api_key_id::text AND status IN ('opening', 'open')))`

func countUnfinished(ctx context.Context, q rowQuerier, owner string) (int, error) {
	var n int
	// A live interactive session holds a tab like a running job: it counts too.
	err := q.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs j JOIN batches b ON b.id = j.batch_id
		WHERE b.api_key_id = $1 AND j.status IN ('queued', 'running'))
		+ (SELECT count(*) FROM sessions WHERE owner = $1::text AND status IN ('opening', 'open'))`, owner).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unfinished jobs: %w", err)
	}
	return n, nil
}
