package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// Event is one Server-Sent Event of a live stream
// (GET /v1/batches/:id/events, GET /v1/runs/:id/events).
type Event struct {
	// ID is the event's opaque id; a reconnect sends the last one as
	// Last-Event-ID to resume after it.
	ID string
	// Type is the event name: snapshot, job, batch, comparison, run, done.
	Type string
	// Data is the event's JSON.
	Data json.RawMessage
}

// eventReader parses a text/event-stream (the WHATWG "event stream
// interpretation"): fields per line, an event per blank line, comments
// (heartbeats) skipped.
type eventReader struct {
	r      *bufio.Reader
	lastID string
}

func newEventReader(r io.Reader) *eventReader { return &eventReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next event with data, or the read error (io.EOF at the
// end of the stream). A partial event at the end is dropped, as browsers do.
func (er *eventReader) next() (Event, error) {
	var (
		typ  string
		data strings.Builder
		has  bool
	)
	for {
		line, err := er.r.ReadString('\n')
		if err != nil {
			return Event{}, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !has {
				typ = ""
				continue
			}
			if typ == "" {
				typ = "message"
			}
			return Event{ID: er.lastID, Type: typ, Data: json.RawMessage(data.String())}, nil
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment: the heartbeat
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			typ = value
		case "data":
			if has {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			has = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				er.lastID = value
			}
		}
	}
}

// errNoStream says the server offers no usable event stream for the
// resource: the caller polls instead.
var errNoStream = errors.New("no event stream")

// streamIdle is how long a stream may stay silent (no event, no heartbeat)
// before it is taken as dead and reopened; the api's heartbeat is every 15 s.
const streamIdle = 45 * time.Second

// maxStreamFailures is how many reconnects in a row may fail before a wait
// falls back to polling.
const maxStreamFailures = 5

// follow reads the event stream at path, resuming with Last-Event-ID after a
// dropped connection, and hands each event to handle until handle says done
// or returns an error. It returns errNoStream when the stream is missing or
// keeps failing (any answer but 200 text/event-stream, except 401 and 403,
// which are returned), or when it ends after terminal() became true without
// a done event: the caller polls then.
func (c *Client) follow(ctx context.Context, path string, handle func(Event) (bool, error), terminal func() bool) error {
	lastID, failures := "", 0
	for {
		got, err := c.followOnce(ctx, path, &lastID, handle)
		switch {
		case err == nil:
			return nil // done
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errNoStream):
			return err
		case errors.Is(err, errHandler):
			return errors.Unwrap(err)
		}
		var apiErr *Error
		if errors.As(err, &apiErr) {
			return err
		}
		if terminal() {
			return errNoStream // ended without done: read the final state instead
		}
		if got {
			failures = 0
		} else if failures++; failures >= maxStreamFailures {
			return errNoStream
		}
		if err := sleep(ctx, time.Duration(failures)*250*time.Millisecond); err != nil {
			return err
		}
	}
}

// errHandler wraps an error of the event handler, which ends the wait.
var errHandler = errors.New("event handler")

type handlerError struct{ err error }

func (e handlerError) Error() string   { return e.err.Error() }
func (e handlerError) Is(t error) bool { return t == errHandler }
func (e handlerError) Unwrap() error   { return e.err }

// followOnce opens the stream once and reads it until it ends. got says
// whether any event arrived. It returns nil when handle said done.
func (c *Client) followOnce(ctx context.Context, path string, lastID *string, handle func(Event) (bool, error)) (got bool, err error) {
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := http.Header{"Accept": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	if *lastID != "" {
		h.Set("Last-Event-ID", *lastID)
	}
	resp, err := c.send(connCtx, request{method: http.MethodGet, path: path, header: h})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e := readError(resp)
		var apiErr *Error
		if errors.As(e, &apiErr) && (apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden) {
			return false, e
		}
		return false, errNoStream // 404 of a route, 405, 503 too_many_streams, 429 concurrency_limit (the key holds its share of streams), …: poll
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return false, errNoStream
	}
	idle := time.AfterFunc(c.idle, cancel)
	defer idle.Stop()
	er := newEventReader(&touchReader{r: resp.Body, touch: func() { idle.Reset(c.idle) }})
	for {
		ev, err := er.next()
		if err != nil {
			return got, err
		}
		got = true
		if ev.ID != "" {
			*lastID = ev.ID
		}
		done, err := handle(ev)
		if err != nil {
			return got, handlerError{err}
		}
		if done {
			return got, nil
		}
	}
}

// touchReader calls touch after every read that returned bytes.
type touchReader struct {
	r     io.Reader
	touch func()
}

func (t *touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.touch()
	}
	return n, err
}
