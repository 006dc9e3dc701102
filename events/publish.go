package events

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Publisher defaults.
const (
	// DefaultMaxLen bounds each stream (approximately, XADD MAXLEN ~): a
	// client further behind than that gets a fresh snapshot instead.
	DefaultMaxLen = 10_000
	// DefaultIdleTTL is how long a stream lives after its last entry while
	// the batch or run is not finished (a lost final entry must not leak it).
	DefaultIdleTTL = 24 * time.Hour
	// DefaultDoneTTL is how long a stream lives after its final entry, for
	// clients that reconnect late.
	DefaultDoneTTL = time.Hour
	// DefaultTimeout bounds one publish.
	DefaultTimeout = 2 * time.Second
)

// Publisher appends events to the streams. Publishing is best effort: an
// error is logged and counted (Failures), never returned, so a job's outcome
// never depends on it. A nil *Publisher publishes nothing.
type Publisher struct {
	Redis   redis.UniversalClient
	MaxLen  int64         // default DefaultMaxLen
	IdleTTL time.Duration // default DefaultIdleTTL
	DoneTTL time.Duration // default DefaultDoneTTL
	Timeout time.Duration // default DefaultTimeout
	Logger  *slog.Logger

	published atomic.Int64
	failures  atomic.Int64
	// Now stamps the events' "at"; nil means time.Now.
	Now func() time.Time
}

// Published counts the events published; Failures counts the publishes that
// failed (each may have carried several events).
func (p *Publisher) Published() int64 { return p.published.Load() }

// Failures counts the failed publishes.
func (p *Publisher) Failures() int64 { return p.failures.Load() }

// Time is the "at" of events published now.
func (p *Publisher) Time() time.Time {
	if p != nil && p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Publish appends evs to stream in one round trip (a transaction, so they
// get consecutive ids) and refreshes the stream's TTL: DoneTTL when final
// (the batch or run has finished), IdleTTL otherwise. It runs on a context
// that outlives ctx's cancel, bounded by Timeout.
func (p *Publisher) Publish(ctx context.Context, stream string, final bool, evs ...Event) {
	if p == nil || p.Redis == nil || len(evs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout())
	defer cancel()
	err := p.publish(ctx, stream, final, evs)
	if err != nil {
		p.failures.Add(1)
		p.logger().WarnContext(ctx, "publish events (clients fall back to the database's state)", "stream", stream,
			"events", len(evs), "err", err)
		return
	}
	p.published.Add(int64(len(evs)))
}

func (p *Publisher) publish(ctx context.Context, stream string, final bool, evs []Event) error {
	pipe := p.Redis.TxPipeline()
	for _, e := range evs {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", e.Type, err)
		}
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream, MaxLen: p.maxLen(), Approx: true,
			Values: []any{"type", e.Type, "data", data}})
	}
	ttl := p.IdleTTL
	if ttl <= 0 {
		ttl = DefaultIdleTTL
	}
	if final {
		if ttl = p.DoneTTL; ttl <= 0 {
			ttl = DefaultDoneTTL
		}
	}
	pipe.Expire(ctx, stream, ttl)
	_, err := pipe.Exec(ctx)
	return err
}

func (p *Publisher) maxLen() int64 {
	if p.MaxLen > 0 {
		return p.MaxLen
	}
	return DefaultMaxLen
}

func (p *Publisher) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultTimeout
}

func (p *Publisher) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}
