package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/minio/minio-go/v7"
)

// ContentPrefix is where content-addressed objects live:
// content/sha256/<first two hex digits>/<sha256>. Identical bytes have one
// key, so they are stored once however many artifacts name them.
const ContentPrefix = "content/sha256/"

// ContentKey is the content-addressed key of bytes whose SHA-256 is sum
// (lowercase hex), or "" when sum is not one.
func ContentKey(sum string) string {
	if !IsSHA256(sum) {
		return ""
	}
	return ContentPrefix + sum[:2] + "/" + sum
}

// IsSHA256 reports whether s is a lowercase hex SHA-256.
func IsSHA256(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// IsContentKey reports whether key is a ContentKey.
func IsContentKey(key string) bool {
	rest, ok := strings.CutPrefix(key, ContentPrefix)
	return ok && len(rest) == 67 && rest[2] == '/' && rest[:2] == rest[3:5] && IsSHA256(rest[3:])
}

// PutContent stores data under its ContentKey. When an object with the same
// SHA-256 and size is already there, nothing is uploaded: the object is
// touched instead (its metadata rewritten in place, which moves its
// last-modified time to now), so an orphan sweep that judges by age never
// takes an object a new artifact is about to name. Object.Reused says which
// happened.
//
// The object is stored with contentType and `Content-Disposition:
// attachment`: several artifacts may share it, each with its own name and
// type, so links to it name both (PresignGetAs), and a browser that reaches
// it without them saves rather than renders it.
func (s *Store) PutContent(ctx context.Context, data []byte, contentType string) (Object, error) {
	sum := sha256.Sum256(data)
	key := ContentKey(hex.EncodeToString(sum[:]))
	if contentType == "" {
		contentType = defaultContentType
	}
	if existing, err := s.Stat(ctx, key); err == nil && existing.SHA256 == hex.EncodeToString(sum[:]) &&
		existing.Bytes == int64(len(data)) {
		if err := s.touch(ctx, key, existing); err == nil {
			existing.Reused = true
			return existing, nil
		}
		// A failed touch falls through to a plain upload, which touches too.
	}
	return s.Put(ctx, key, data, contentType, PutOptions{ContentDisposition: "attachment"})
}

// touch rewrites key's metadata in place (S3's copy onto itself with the
// REPLACE directive): no bytes move, the last-modified time becomes now.
func (s *Store) touch(ctx context.Context, key string, o Object) error {
	_, err := s.client.CopyObject(ctx,
		minio.CopyDestOptions{Bucket: s.bucket, Object: key, ReplaceMetadata: true,
			UserMetadata: map[string]string{metaSHA256: o.SHA256, "Content-Type": o.ContentType,
				"Content-Disposition": "attachment"}},
		minio.CopySrcOptions{Bucket: s.bucket, Object: key})
	return wrap("touch", key, err)
}
