package artifacts

import (
	"bytes"
	"context"

	"github.com/minio/minio-go/v7"
)

// DestroyBucket removes the store's bucket and everything in it (tests only).
func DestroyBucket(ctx context.Context, s *Store) error {
	return s.client.RemoveBucketWithOptions(ctx, s.bucket, minio.RemoveBucketOptions{ForceDelete: true})
}

// PutRaw writes data under key with the given SHA-256 metadata, bypassing
// Put's hashing, to simulate an object corrupted at rest (tests only).
func PutRaw(ctx context.Context, s *Store, key string, data []byte, sha string) error {
	_, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{UserMetadata: map[string]string{metaSHA256: sha}})
	return err
}

// Wrap is wrap, the classification of a minio-go error (tests only).
var Wrap = wrap
