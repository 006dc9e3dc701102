package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RoundTrips counts the Postgres round trips a Store makes: each query or
// exec, each batch (one round trip however many statements it pipelines),
// each explicit prepare and each health-check ping of an idle pooled
// connection. Tests and benches use it to show what a path costs
// (WithRoundTrips); Label, when set, files each round trip under a label
// taken from its context (the queue task it runs for, say).
type RoundTrips struct {
	Label func(ctx context.Context) string

	mu      sync.Mutex
	queries map[string]int
	batches map[string]int
	prep    map[string]int
	pings   int
	sqls    map[string][]string
}

// Option configures Open.
type Option func(*pgxpool.Config)

// WithRoundTrips makes the store count its round trips in c.
func WithRoundTrips(c *RoundTrips) Option {
	return func(cfg *pgxpool.Config) {
		cfg.ConnConfig.Tracer = c
		should := cfg.ShouldPing
		cfg.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
			ping := p.IdleDuration > pgxpoolPingIdle
			if should != nil {
				ping = should(ctx, p)
			}
			if ping {
				c.mu.Lock()
				c.pings++
				c.mu.Unlock()
			}
			return ping
		}
	}
}

// pgxpoolPingIdle is pgxpool's default: a connection idle longer is pinged
// before it is handed out.
const pgxpoolPingIdle = time.Second

// Count is what RoundTrips counted under one label.
type Count struct {
	Queries, Batches, Prepares int
	// SQL is the first line of each query and batch statement, in order.
	SQL []string
}

// Total is the round trips of queries and batches (a warm connection's:
// prepares happen once per statement and connection).
func (c Count) Total() int { return c.Queries + c.Batches }

// Get returns what was counted under label.
func (c *RoundTrips) Get(label string) Count {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Count{Queries: c.queries[label], Batches: c.batches[label], Prepares: c.prep[label],
		SQL: append([]string(nil), c.sqls[label]...)}
}

// Pings is the health-check pings counted (under no label).
func (c *RoundTrips) Pings() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pings
}

// Reset forgets everything counted.
func (c *RoundTrips) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries, c.batches, c.prep, c.sqls, c.pings = nil, nil, nil, nil, 0
}

func (c *RoundTrips) add(ctx context.Context, kind string, sqls ...string) {
	label := ""
	if c.Label != nil {
		label = c.Label(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queries == nil {
		c.queries, c.batches, c.prep, c.sqls = map[string]int{}, map[string]int{}, map[string]int{}, map[string][]string{}
	}
	switch kind {
	case "query":
		c.queries[label]++
	case "batch":
		c.batches[label]++
	case "prepare":
		c.prep[label]++
		return
	}
	for _, s := range sqls {
		c.sqls[label] = append(c.sqls[label], kind+": "+firstLine(s))
	}
}

// firstLine is s's first non-blank line, trimmed, at most 100 bytes.
func firstLine(s string) string {
	start := 0
	for start < len(s) && (s[start] == '\n' || s[start] == ' ' || s[start] == '\t') {
		start++
	}
	s = s[start:]
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

// TraceQueryStart implements pgx.QueryTracer.
func (c *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.add(ctx, "query", d.SQL)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var sqls []string
	if d.Batch != nil {
		for _, q := range d.Batch.QueuedQueries {
			sqls = append(sqls, q.SQL)
		}
	}
	c.add(ctx, "batch", sqls...)
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TracePrepareStart implements pgx.PrepareTracer.
func (c *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	c.add(ctx, "prepare", d.SQL)
	return ctx
}

// TracePrepareEnd implements pgx.PrepareTracer.
func (c *RoundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

var (
	_ pgx.QueryTracer   = (*RoundTrips)(nil)
	_ pgx.BatchTracer   = (*RoundTrips)(nil)
	_ pgx.PrepareTracer = (*RoundTrips)(nil)
)
