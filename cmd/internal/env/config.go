package env

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/queue"
)

// This file reads the variables both binaries share; cmd/api/config.go and
// cmd/worker/config.go read the rest.

// LogLevel reads SNAPQ_LOG_LEVEL (debug, info, warn, error; default info).
// An unknown level is not an error: it means info.
func LogLevel(r *Reader) slog.Level {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToLower(r.String("SNAPQ_LOG_LEVEL", "info")))); err != nil {
		level = slog.LevelInfo
	}
	return level
}

// Logger builds the process logger: JSON to stderr at level, every record
// tagged with the service name.
func Logger(level slog.Level, service string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("service", service)
}

// Redis parses SNAPQ_REDIS_URL (default redis://127.0.0.1:6379/0): a single
// server, Sentinel (redis-sentinel://) or Cluster (redis-cluster://); the
// forms are queue.ParseRedisURL's.
func Redis(r *Reader) asynq.RedisConnOpt {
	raw := r.Secret("SNAPQ_REDIS_URL", "redis://127.0.0.1:6379/0")
	opt, err := queue.ParseRedisURL(raw)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("SNAPQ_REDIS_URL: %w", err))
		return asynq.RedisClientOpt{Addr: "127.0.0.1:6379"}
	}
	return opt
}

// QueueShards reads SNAPQ_QUEUE_SHARDS, the queues each task kind is split
// into (default 8 on a Redis Cluster, else 1); api and workers must agree.
func QueueShards(r *Reader, opt asynq.RedisConnOpt) int {
	n := r.Int("SNAPQ_QUEUE_SHARDS", queue.DefaultShards(queue.IsCluster(opt)))
	if err := queue.ValidateShards(n); err != nil {
		r.errs = append(r.errs, err)
		return 1
	}
	return n
}

// DatabaseURL reads SNAPQ_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable).
func DatabaseURL(r *Reader) string {
	return r.Secret("SNAPQ_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable")
}

// S3 reads the SNAPQ_S3_* variables and SNAPQ_PRESIGN_EXPIRY; the caller
// validates the result (artifacts.Config.Validate).
func S3(r *Reader) artifacts.Config {
	c := artifacts.DefaultConfig()
	c.Endpoint = r.String("SNAPQ_S3_ENDPOINT", "127.0.0.1:9000")
	c.AccessKey = r.Secret("SNAPQ_S3_ACCESS_KEY", "")
	c.SecretKey = r.Secret("SNAPQ_S3_SECRET_KEY", "")
	c.Bucket = r.String("SNAPQ_S3_BUCKET", "snapq")
	c.UseSSL = r.Bool("SNAPQ_S3_USE_SSL", false)
	c.Region = r.String("SNAPQ_S3_REGION", c.Region)
	c.PresignExpiry = r.Duration("SNAPQ_PRESIGN_EXPIRY", 15*time.Minute)
	c.PublicURL = r.String("SNAPQ_S3_PUBLIC_URL", "")
	return c
}

// SecretSealer reads SNAPQ_SECRET_KEY (32 bytes, base64 or hex) and
// SNAPQ_SECRET_KEYS_OLD (comma-separated keys that still open what they
// sealed): the auth profiles' encryption at rest. Nil, without an error, when
// SNAPQ_SECRET_KEY is unset: auth profiles are off.
func SecretSealer(r *Reader) *authprofile.Sealer {
	raw := r.Secret("SNAPQ_SECRET_KEY", "")
	if raw == "" {
		return nil
	}
	cur, err := authprofile.ParseKey(raw)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("SNAPQ_SECRET_KEY: %w", err))
		return nil
	}
	var old [][]byte
	for i, s := range strings.Split(r.Secret("SNAPQ_SECRET_KEYS_OLD", ""), ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		k, err := authprofile.ParseKey(s)
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("SNAPQ_SECRET_KEYS_OLD (key %d): %w", i+1, err))
			return nil
		}
		old = append(old, k)
	}
	sl, err := authprofile.NewSealer(cur, old...)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("SNAPQ_SECRET_KEY: %w", err))
		return nil
	}
	return sl
}
