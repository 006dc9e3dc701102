package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hub reads the streams for one API replica: one blocking XREAD per stream
// that has clients, however many clients follow it, fanned out to their
// Subscriptions. A client first catches up from its own position with
// Range, then follows its Subscription, skipping what it has seen.
type Hub struct {
	Redis redis.UniversalClient
	// Block is how long one XREAD waits (default 5s); a stream without
	// clients stops being read within it.
	Block time.Duration
	// Buffer is how many entries a subscriber may fall behind before it is
	// dropped (its channel closed; the client reconnects and catches up from
	// Redis). Default 1024.
	Buffer int
	Logger *slog.Logger

	mu     sync.Mutex
	topics map[string]*topic
}

type topic struct {
	subs   map[*Subscription]struct{}
	cancel context.CancelFunc
}

// Subscription receives the entries of one stream appended after it was
// made. C is closed when the subscriber fell Buffer entries behind.
type Subscription struct {
	C      <-chan Entry
	c      chan Entry
	stream string
	hub    *Hub
	closed bool // guarded by hub.mu
}

// Subscribe follows stream from its current end. Close the subscription
// when done.
func (h *Hub) Subscribe(ctx context.Context, stream string) (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.topics == nil {
		h.topics = map[string]*topic{}
	}
	buf := h.Buffer
	if buf <= 0 {
		buf = 1024
	}
	sub := &Subscription{c: make(chan Entry, buf), stream: stream, hub: h}
	sub.C = sub.c
	if t, ok := h.topics[stream]; ok {
		t.subs[sub] = struct{}{}
		return sub, nil
	}
	// The reader starts at the stream's end now, under the lock, so a
	// subscriber's catch-up (Range, after this returns) overlaps it.
	start, err := h.Tail(ctx, stream)
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithCancel(context.Background())
	t := &topic{subs: map[*Subscription]struct{}{sub: {}}, cancel: cancel}
	h.topics[stream] = t
	go h.read(tctx, stream, start, t)
	return sub, nil
}

// Close stops the subscription; the stream is no longer read once its last
// subscription closes.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop(s)
}

// drop removes s (h.mu held).
func (h *Hub) drop(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	close(s.c)
	t := h.topics[s.stream]
	if t == nil {
		return
	}
	delete(t.subs, s)
	if len(t.subs) == 0 {
		t.cancel()
		delete(h.topics, s.stream)
	}
}

// Streams counts the streams being read (for metrics and tests).
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.topics)
}

func (h *Hub) read(ctx context.Context, stream, last string, t *topic) {
	block := h.Block
	if block <= 0 {
		block = 5 * time.Second
	}
	for ctx.Err() == nil {
		res, err := h.Redis.XRead(ctx, &redis.XReadArgs{Streams: []string{stream, last}, Count: 512, Block: block}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			h.logger().Warn("read event stream", "stream", stream, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for _, s := range res {
			for _, m := range s.Messages {
				e := toEntry(m)
				last = e.ID
				h.fanOut(t, e)
			}
		}
	}
}

func (h *Hub) fanOut(t *topic, e Entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range t.subs {
		select {
		case sub.c <- e:
		default:
			h.drop(sub) // too far behind: it reconnects and catches up from Redis
		}
	}
}

// Tail returns the id of the stream's last entry, or "0-0" when the stream
// is empty or missing.
func (h *Hub) Tail(ctx context.Context, stream string) (string, error) {
	ms, err := h.Redis.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("tail of %s: %w", stream, err)
	}
	if len(ms) == 0 {
		return "0-0", nil
	}
	return ms[0].ID, nil
}

// Range returns up to count entries after id after.
func (h *Hub) Range(ctx context.Context, stream, after string, count int64) ([]Entry, error) {
	ms, err := h.Redis.XRangeN(ctx, stream, "("+after, "+", count).Result()
	if err != nil {
		return nil, fmt.Errorf("range of %s: %w", stream, err)
	}
	out := make([]Entry, len(ms))
	for i, m := range ms {
		out[i] = toEntry(m)
	}
	return out, nil
}

// Resumable reports whether every entry after id after is still in the
// stream: false when the stream is gone (expired) or was trimmed past it.
func (h *Hub) Resumable(ctx context.Context, stream, after string) (bool, error) {
	info, err := h.Redis.XInfoStream(ctx, stream).Result()
	if err != nil {
		if isNoSuchKey(err) {
			return false, nil
		}
		return false, fmt.Errorf("info of %s: %w", stream, err)
	}
	if info.MaxDeletedEntryID != "" && After(info.MaxDeletedEntryID, after) {
		return false, nil
	}
	return true, nil
}

func isNoSuchKey(err error) bool {
	// XINFO STREAM on a missing key: "ERR no such key".
	return err != nil && (errors.Is(err, redis.Nil) || err.Error() == "ERR no such key")
}

func toEntry(m redis.XMessage) Entry {
	e := Entry{ID: m.ID}
	e.Type, _ = m.Values["type"].(string)
	if d, ok := m.Values["data"].(string); ok {
		e.Data = []byte(d)
	}
	return e
}

func (h *Hub) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}
