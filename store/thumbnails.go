package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

// insertThumbnail stores a's thumbnail row, if it has one.
func insertThumbnail(ctx context.Context, tx pgx.Tx, a *jobs.Artifact) error {
	t := a.Thumbnail
	if t == nil {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO thumbnails (artifact_id, object_key, content_type, bytes, width, height)
		VALUES ($1, $2, $3, $4, $5, $6)`, a.ID, t.ObjectKey, t.ContentType, t.Bytes, t.Width, t.Height); err != nil {
		return fmt.Errorf("thumbnail of %s: %w", a.Name, err)
	}
	return nil
}

// scanArtifactThumbnail scans artifactColumns followed by a LEFT JOINed
// thumbnail's object_key, content_type, bytes, width, height.
func scanArtifactThumbnail(row pgx.Row) (*jobs.Artifact, error) {
	var a jobs.Artifact
	var crc int64
	var key, ct *string
	var n *int64
	var w, h *int
	err := row.Scan(&a.ID, &a.JobID, &a.Kind, &a.Name, &a.Seq, &a.ObjectKey, &a.ContentType, &a.Bytes,
		&a.Width, &a.Height, &a.SHA256, &crc, &a.CreatedAt, &key, &ct, &n, &w, &h)
	a.CRC32 = uint32(crc)
	if key != nil && ct != nil && n != nil && w != nil && h != nil {
		a.Thumbnail = &jobs.Thumbnail{ObjectKey: *key, ContentType: *ct, Bytes: *n, Width: *w, Height: *h}
	}
	return &a, err
}

// GetThumbnail returns an artifact's thumbnail, or jobs.ErrNotFound when it
// has none.
func (s *Store) GetThumbnail(ctx context.Context, artifactID string) (*jobs.Thumbnail, error) {
	var t jobs.Thumbnail
	err := s.pool.QueryRow(ctx, `SELECT object_key, content_type, bytes, width, height FROM thumbnails
		WHERE artifact_id = $1`, artifactID).Scan(&t.ObjectKey, &t.ContentType, &t.Bytes, &t.Width, &t.Height)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("thumbnail of %s: %w", artifactID, unavailable(err))
	}
	return &t, nil
}

// AddThumbnail records the thumbnail of an artifact already committed (an
// interactive capture's preview, made after its answer); a second call for
// the same artifact keeps the first.
func (s *Store) AddThumbnail(ctx context.Context, artifactID string, t *jobs.Thumbnail) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO thumbnails (artifact_id, object_key, content_type, bytes, width, height)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (artifact_id) DO NOTHING`,
		artifactID, t.ObjectKey, t.ContentType, t.Bytes, t.Width, t.Height); err != nil {
		return fmt.Errorf("thumbnail of %s: %w", artifactID, unavailable(err))
	}
	return nil
}
