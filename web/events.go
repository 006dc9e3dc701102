package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Live events: GET /v1/batches/:id/events and /v1/runs/:id/events stream a
// batch's job changes (a run's comparisons) as Server-Sent Events. The store
// publishes each committed change to the resource's Redis Stream; EventHub
// reads the streams for this replica. Each SSE event's id is the stream
// entry's id, so a client that reconnects with Last-Event-ID gets exactly the
// entries after it. Without one, the stream starts with a snapshot (the
// resource as GET shows it), taken after noting the stream's end so nothing
// between the two is missed. The final "done" event is read from Postgres
// whenever the resource is seen finished (a batch/run event, or the check on
// every sseCheckEvery-th heartbeat, reading the status only), so a lost publish cannot
// leave a client waiting; the other heartbeats catch up from the event stream itself.

// EventHub reads the event streams; events.Hub implements it.
type EventHub interface {
	Subscribe(ctx context.Context, stream string) (*events.Subscription, error)
	Tail(ctx context.Context, stream string) (string, error)
	Range(ctx context.Context, stream, after string, count int64) ([]events.Entry, error)
	Resumable(ctx context.Context, stream, after string) (bool, error)
}

var _ EventHub = (*events.Hub)(nil)

// SSEConfig configures the event streams.
type SSEConfig struct {
	// MaxStreams caps the open streams of this replica; past it a request
	// gets 503 too_many_streams (SNAPQ_SSE_MAX_STREAMS, default 1000).
	MaxStreams int
	// MaxDuration ends a stream after this long; the client reconnects with
	// its Last-Event-ID (SNAPQ_SSE_MAX_DURATION, default 30m).
	MaxDuration time.Duration
	// Heartbeat is the interval of the ": ping" comment, and of the check of
	// the resource in Postgres (SNAPQ_SSE_HEARTBEAT, default 15s).
	Heartbeat time.Duration
}

// SSE defaults.
const (
	DefaultSSEMaxStreams  = 1000
	DefaultSSEMaxDuration = 30 * time.Minute
	DefaultSSEHeartbeat   = 15 * time.Second
	// sseWriteTimeout drops a client that does not take a write for this long.
	sseWriteTimeout = 30 * time.Second
	// sseSettle is how long a stream keeps reading after it saw its resource
	// finish, for job events published just after the last commit's counts.
	sseSettle     = 200 * time.Millisecond
	sseRetryAfter = 5 // seconds, of a 503 too_many_streams
	// sseCheckEvery is how many heartbeats pass between two reads of the resource's
	// status in Postgres; the other heartbeats catch up from the event stream only.
	sseCheckEvery = 4
)

// Validate checks c's values (zero means the default).
func (c SSEConfig) Validate() error {
	if c.MaxStreams < 0 || c.MaxDuration < 0 || c.Heartbeat < 0 {
		return errors.New("SNAPQ_SSE_MAX_STREAMS, SNAPQ_SSE_MAX_DURATION and SNAPQ_SSE_HEARTBEAT must not be negative")
	}
	return nil
}

// WithDefaults returns c with each zero value set to its default.
func (c SSEConfig) WithDefaults() SSEConfig {
	if c.MaxStreams == 0 {
		c.MaxStreams = DefaultSSEMaxStreams
	}
	if c.MaxDuration == 0 {
		c.MaxDuration = DefaultSSEMaxDuration
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultSSEHeartbeat
	}
	return c
}

// eventRoutes are the routes that take the dashboard's key cookie besides
// /v1/artifacts/:id (EventSource cannot send an Authorization header).
var eventRoutes = map[string]bool{"/v1/batches/:id/events": true, "/v1/runs/:id/events": true,
	"/v1/sessions/:id/events": true, "/v1/sessions/:id/artifacts/:name": true}

// sseSource is what one stream follows: its Redis Stream and how to read its
// resource from Postgres.
type sseSource struct {
	stream string
	// load reads the resource: its GET JSON and whether it has finished.
	load func(ctx context.Context) (view any, final bool, err error)
	// finished reads only whether the resource has finished (a run without its
	// comparisons): the heartbeats' safety net for a lost publish.
	finished func(ctx context.Context) (bool, error)
	// finalEntry reports whether an entry says the resource finished.
	finalEntry func(e events.Entry) bool
}

func (s *Server) batchEvents(c *gin.Context) error {
	b, err := loaded[*jobs.Batch](c, batchKey)
	if err != nil {
		return err
	}
	id := b.ID
	return s.serveEvents(c, sseSource{
		stream: events.BatchStream(id),
		load: func(ctx context.Context) (any, bool, error) {
			b, err := s.Batches.GetBatch(ctx, id)
			if err != nil {
				return nil, false, fmt.Errorf("batch %s: %w", id, err)
			}
			return b.View(), b.Status() == jobs.BatchCompleted, nil
		},
		finished: func(ctx context.Context) (bool, error) {
			b, err := s.Batches.GetBatch(ctx, id)
			return err == nil && b.Status() == jobs.BatchCompleted, err
		},
		finalEntry: func(e events.Entry) bool {
			if e.Type != events.TypeBatch {
				return false
			}
			var d struct{ Status jobs.BatchStatus }
			return json.Unmarshal(e.Data, &d) == nil && d.Status == jobs.BatchCompleted
		},
	})
}

func (s *Server) runEvents(c *gin.Context) error {
	r, err := loaded[*regression.Run](c, runKey)
	if err != nil {
		return err
	}
	id, base := r.ID, s.baseURL(c)
	return s.serveEvents(c, sseSource{
		stream: events.RunStream(id),
		load: func(ctx context.Context) (any, bool, error) {
			r, err := s.Suites.GetRun(ctx, id)
			if err != nil {
				return nil, false, fmt.Errorf("run %s: %w", id, err)
			}
			return newRunView(r, base), r.Status != regression.RunRunning, nil
		},
		finished: func(ctx context.Context) (bool, error) {
			r, err := s.Suites.GetRunSummary(ctx, id)
			return err == nil && r.Status != regression.RunRunning, err
		},
		finalEntry: func(e events.Entry) bool {
			if e.Type != events.TypeRun {
				return false
			}
			var d struct{ Status regression.RunStatus }
			return json.Unmarshal(e.Data, &d) == nil && d.Status != "" && d.Status != regression.RunRunning
		},
	})
}

// tooManyStreams is the 503 of a replica at SNAPQ_SSE_MAX_STREAMS.
func tooManyStreams() error {
	return &apiError{Status: http.StatusServiceUnavailable, Code: "too_many_streams",
		Message: "this server has as many event streams open as it allows; retry later or poll the resource",
		Header:  http.Header{"Retry-After": {strconv.Itoa(sseRetryAfter)}}}
}

// lastEventID is the client's resume position: the Last-Event-ID header or
// the last_event_id query parameter; "" (start with a snapshot) when absent
// or not one of our ids.
func lastEventID(c *gin.Context) string {
	id := c.GetHeader("Last-Event-ID")
	if id == "" {
		id = c.Query("last_event_id")
	}
	id, _, _ = strings.Cut(id, ".") // "<entry id>.done" resumes after the entry
	if !events.ValidID(id) {
		return ""
	}
	return id
}

func (s *Server) serveEvents(c *gin.Context, src sseSource) error {
	if s.Events == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "live events are not enabled on this server"}
	}
	cfg := s.SSE.WithDefaults()
	release, err := s.admitStream(c, cfg)
	if err != nil {
		return err
	}
	defer release()
	// The server's timeouts are for ordinary requests: lift them before the
	// Redis and store reads below, which a slow moment could push past them
	// (the connection would close before the stream's first byte).
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	ctx, cancel := context.WithTimeout(c.Request.Context(), cfg.MaxDuration)
	defer cancel()

	at, err := s.streamStart(ctx, lastEventID(c), src)
	if err != nil {
		return err
	}
	if at.final {
		// Finished already: the snapshot, then done.
		w := newSSEWriter(c)
		if w.start() == nil && w.event(at.last, events.TypeSnapshot, at.snapshot) == nil {
			_ = w.event(at.last+".done", events.TypeDone, at.snapshot)
		}
		return nil
	}
	sub, err := s.Events.Subscribe(ctx, src.stream)
	if err != nil {
		return err
	}
	defer sub.Close()

	w := newSSEWriter(c)
	if err := w.start(); err != nil {
		return nil // the client is gone
	}
	if at.snapshot != nil {
		if w.event(at.last, events.TypeSnapshot, at.snapshot) != nil {
			return nil
		}
	}
	st := &sseStream{s: s, w: w, src: src, last: at.last, final: at.resumedFinal}
	st.run(ctx, sub, cfg.Heartbeat)
	return nil
}

// sseStart is where a stream starts: after the client's last id (resumedFinal when the
// client saw the last change but not done), or at a snapshot (final when the subject is
// finished already).
type sseStart struct {
	last         string
	snapshot     any
	final        bool
	resumedFinal bool
}

// streamStart resumes after last when the stream still holds it, or starts at a snapshot
// and the stream's tail.
func (s *Server) streamStart(ctx context.Context, last string, src sseSource) (sseStart, error) {
	if last != "" {
		ok, err := s.Events.Resumable(ctx, src.stream, last)
		if err != nil {
			return sseStart{}, err
		}
		if !ok {
			last = "" // expired or trimmed past it: start again from a snapshot
		}
	}
	if last != "" {
		// A client that saw the last change but not done gets the rest, then done.
		_, resumedFinal, err := src.load(ctx)
		if err != nil {
			return sseStart{}, err
		}
		return sseStart{last: last, resumedFinal: resumedFinal}, nil
	}
	tail, err := s.Events.Tail(ctx, src.stream)
	if err != nil {
		return sseStart{}, err
	}
	snapshot, final, err := src.load(ctx)
	if err != nil {
		return sseStart{}, err
	}
	return sseStart{last: tail, snapshot: snapshot, final: final}, nil
}

// admitStream takes one of the replica's streams (SNAPQ_SSE_MAX_STREAMS, 503) and one of
// the key's share (the work budget, SNAPQ_SSE_MAX_STREAMS_PER_KEY, 429).
func (s *Server) admitStream(c *gin.Context, cfg SSEConfig) (func(), error) {
	if n := s.streams.Add(1); n > int64(cfg.MaxStreams) {
		s.streams.Add(-1)
		return nil, tooManyStreams()
	}
	release, err := s.acquire(c, jobs.WorkStream)
	if err != nil {
		s.streams.Add(-1)
		return nil, err
	}
	return func() { release(); s.streams.Add(-1) }, nil
}

// sseStream is one client's stream after its start.
type sseStream struct {
	s     *Server
	w     *sseWriter
	src   sseSource
	last  string // the id of the last entry written
	final bool   // the resource was seen finished
	beats int    // heartbeats so far
}

func (st *sseStream) run(ctx context.Context, sub *events.Subscription, heartbeat time.Duration) {
	// Catch up from the stream itself, then follow the subscription (which
	// started before the catch-up, so the two overlap; ids decide).
	for {
		es, err := st.s.Events.Range(ctx, st.src.stream, st.last, 512)
		if err != nil {
			st.s.logger().Warn("event stream catch-up", "stream", st.src.stream, "err", err)
			return
		}
		if st.write(es...) != nil {
			return
		}
		if len(es) < 512 || st.final {
			break
		}
	}
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	for !st.final {
		select {
		case <-ctx.Done():
			return // SNAPQ_SSE_MAX_DURATION or the client left: it reconnects with its Last-Event-ID
		case e, ok := <-sub.C:
			if !ok {
				return // fell too far behind: the client reconnects and catches up from Redis
			}
			if st.write(e) != nil {
				return
			}
		case <-ping.C:
			if st.heartbeat(ctx) != nil {
				return
			}
		}
	}
	st.done(ctx, sub)
}

// heartbeat writes the ping, then checks the stream's state from the event stream: the
// entries after the last one written, which the subscription may have dropped. Every
// sseCheckEvery heartbeats it also reads whether the resource finished from Postgres
// (its status only), so a lost publish cannot leave the client waiting.
func (st *sseStream) heartbeat(ctx context.Context) error {
	if err := st.w.comment("ping"); err != nil {
		return err
	}
	es, err := st.s.Events.Range(ctx, st.src.stream, st.last, 512)
	if err != nil {
		st.s.logger().Warn("event stream check", "stream", st.src.stream, "err", err)
	} else if err := st.write(es...); err != nil {
		return err
	}
	if st.beats++; st.final || st.beats%sseCheckEvery != 0 {
		return nil
	}
	final, err := st.src.finished(ctx)
	if err != nil {
		st.s.logger().Warn("event stream check", "stream", st.src.stream, "err", err)
		return nil
	}
	st.final = final
	return nil
}

// write writes the entries not written yet; it notes when one says the
// resource finished.
func (st *sseStream) write(es ...events.Entry) error {
	for _, e := range es {
		if !events.After(e.ID, st.last) {
			continue
		}
		if err := st.w.raw(e.ID, e.Type, e.Data); err != nil {
			return err
		}
		st.last = e.ID
		if st.src.finalEntry(e) {
			// The database decides (an entry cannot end a stream on its own).
			if _, final, err := st.src.load(st.w.c.Request.Context()); err == nil && final {
				st.final = true
			}
		}
	}
	return nil
}

// done writes the entries published just after the last change (briefly
// waiting for them), then the done event with the resource from Postgres.
func (st *sseStream) done(ctx context.Context, sub *events.Subscription) {
	settle := time.NewTimer(sseSettle)
	defer settle.Stop()
wait:
	for {
		select {
		case e, ok := <-sub.C:
			if !ok || st.write(e) != nil {
				break wait
			}
		case <-settle.C:
			break wait
		case <-ctx.Done():
			return
		}
	}
	if es, err := st.s.Events.Range(ctx, st.src.stream, st.last, 512); err == nil {
		if st.write(es...) != nil {
			return
		}
	}
	view, _, err := st.src.load(ctx)
	if err != nil {
		st.s.logger().Warn("event stream done", "stream", st.src.stream, "err", err)
		return
	}
	_ = st.w.event(st.last+".done", events.TypeDone, view)
}

// sseWriter writes Server-Sent Events, flushing each, with a write deadline
// per write (the server's WriteTimeout would end a long stream).
type sseWriter struct {
	c  *gin.Context
	rc *http.ResponseController
}

func newSSEWriter(c *gin.Context) *sseWriter {
	return &sseWriter{c: c, rc: http.NewResponseController(c.Writer)}
}

func (w *sseWriter) start() error {
	if err := w.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	h := w.c.Writer.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.c.Status(http.StatusOK)
	return w.flush()
}

func (w *sseWriter) event(id, typ string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return w.raw(id, typ, b)
}

func (w *sseWriter) raw(id, typ string, data []byte) error {
	if err := w.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := fmt.Fprintf(w.c.Writer, "id: %s\nevent: %s\ndata: %s\n\n", id, typ, data); err != nil {
		return err
	}
	return w.flush()
}

func (w *sseWriter) comment(text string) error {
	if err := w.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := fmt.Fprintf(w.c.Writer, ": %s\n\n", text); err != nil {
		return err
	}
	return w.flush()
}

func (w *sseWriter) flush() error { return w.rc.Flush() }

// streamCount is the number of open event streams of this replica.
type streamCount = atomic.Int64
