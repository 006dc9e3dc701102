package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// API key format: "sq_" followed by 43 base64url characters (32 random bytes).
const (
	keyPrefix     = "sq_"
	keyShownChars = 10 // "sq_" + 7: enough to recognise a key in a list
)

// Errors of the access layer.
var (
	// ErrUnauthorized means no valid, unrevoked API key was presented.
	ErrUnauthorized = errors.New("a valid API key is required: send Authorization: Bearer <key>")
	// ErrIdempotencyConflict means an Idempotency-Key was reused with another body.
	ErrIdempotencyConflict = errors.New("this Idempotency-Key was already used with a different request body")
	// ErrTooManyInFlight means the key has too many unfinished jobs.
	ErrTooManyInFlight = errors.New("too many jobs in flight for this API key")
)

// APIKey is a stored key; the secret itself is never stored.
type APIKey struct {
	ID         string
	Name       string
	Prefix     string
	SHA256     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// KeyStore keeps API keys. store.Store implements it.
type KeyStore interface {
	CreateKey(ctx context.Context, k *APIKey) error
	ListKeys(ctx context.Context) ([]*APIKey, error)
	RevokeKey(ctx context.Context, id string) error
	// KeyBySHA256 returns the unrevoked key with that hash, or ErrNotFound.
	KeyBySHA256(ctx context.Context, sum string) (*APIKey, error)
	TouchKey(ctx context.Context, id string) error
}

// NewAPIKey makes a random key and its record. The key is shown once.
func NewAPIKey(name string) (secret string, k *APIKey, err error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", nil, errors.New("a key needs a name of 1-100 characters (--name)")
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	secret = keyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, &APIKey{ID: NewID(), Name: name, Prefix: secret[:keyShownChars], SHA256: HashKey(secret),
		CreatedAt: time.Now().UTC()}, nil
}

// HashKey is the stored form of a key. A fast hash is right for 256-bit
// random secrets: there is nothing to brute-force.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// LooksLikeKey reports whether s has the shape of a snapq key, so junk is
// refused without a database lookup.
func LooksLikeKey(s string) bool {
	return len(s) == len(keyPrefix)+43 && strings.HasPrefix(s, keyPrefix)
}
