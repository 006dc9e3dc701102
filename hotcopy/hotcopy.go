package hotcopy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Store.
const (
	// DefaultTTL is how long a copy lives: the api reads it at once, when
	// the job's completion reaches the waiting call.
	DefaultTTL = time.Minute
	// DefaultMaxBytes is the most bytes one job keeps copies of
	// (SNAPQ_INTERACTIVE_COPY_BYTES).
	DefaultMaxBytes = 2 << 20
	// HardMaxBytes bounds MaxBytes.
	HardMaxBytes = 64 << 20
)

// Store keeps and reads the copies.
type Store struct {
	Redis redis.UniversalClient
	// TTL of a copy (default DefaultTTL).
	TTL time.Duration
	// MaxBytes is the most bytes of one job's artifacts Keep copies, in
	// order, skipping those past it (0: none; see Validate).
	MaxBytes int
}

// Validate checks MaxBytes.
func (s *Store) Validate() error {
	if s.MaxBytes < 0 || s.MaxBytes > HardMaxBytes {
		return fmt.Errorf("copy bytes %d: want 0 to %d", s.MaxBytes, HardMaxBytes)
	}
	return nil
}

func copyKey(objectKey string) string { return "snapq:hotcopy:" + objectKey }

// Object is one artifact's object key and bytes.
type Object struct {
	Key  string
	Data []byte
}

// Keep copies objs, in order, while their total stays within MaxBytes, in
// one round trip. A copy that could not be written is a read from the
// bucket later, so the caller may ignore the error.
func (s *Store) Keep(ctx context.Context, objs []Object) error {
	if s == nil || s.MaxBytes <= 0 {
		return nil
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	total := 0
	_, err := s.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range objs {
			if total+len(o.Data) > s.MaxBytes {
				continue
			}
			total += len(o.Data)
			p.Set(ctx, copyKey(o.Key), o.Data, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keep artifact copies: %w", err)
	}
	return nil
}

// Get returns the copy of objectKey's bytes when it has exactly size bytes;
// ok=false when there is none (read the bucket).
func (s *Store) Get(ctx context.Context, objectKey string, size int64) (data []byte, ok bool, err error) {
	if s == nil || size > HardMaxBytes {
		return nil, false, nil
	}
	data, err = s.Redis.Get(ctx, copyKey(objectKey)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read artifact copy: %w", err)
	}
	return data, int64(len(data)) == size, nil
}
