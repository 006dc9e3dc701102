package env

import (
	"log/slog"
	"os"
	"strings"

	"github.com/hibiken/asynq"
)

// Logger builds the process logger: JSON to stderr, level from SNAPQ_LOG_LEVEL
// (debug, info, warn, error; default info).
func Logger(r *Reader, service string) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToLower(r.String("SNAPQ_LOG_LEVEL", "info")))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("service", service)
}

// Redis parses SNAPQ_REDIS_URL (default redis://127.0.0.1:6379/0).
func Redis(r *Reader) asynq.RedisConnOpt {
	raw := r.String("SNAPQ_REDIS_URL", "redis://127.0.0.1:6379/0")
	opt, err := asynq.ParseRedisURI(raw)
	if err != nil {
		r.errs = append(r.errs, err)
		return asynq.RedisClientOpt{Addr: "127.0.0.1:6379"}
	}
	return opt
}

// DatabaseURL reads SNAPQ_DATABASE_URL.
func DatabaseURL(r *Reader) string {
	return r.String("SNAPQ_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/snapq?sslmode=disable")
}
