package session

import (
	"context"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/events"
)

// Repo keeps sessions in Postgres (store.Store).
type Repo interface {
	// CreateSession stores s (status opening) unless its owner has perKey sessions open
	// (ErrTooManySessions) or unfinished jobs and open sessions at maxInFlight
	// (jobs.ErrTooManyInFlight); 0: no cap.
	CreateSession(ctx context.Context, s *Session, perKey, maxInFlight int) error
	GetSession(ctx context.Context, id string) (*Session, error)
	ListSessions(ctx context.Context, owner string, limit int) ([]*Session, error)
	// LiveSessions are the sessions opening or open, of every owner (the reaper's).
	LiveSessions(ctx context.Context) ([]*Session, error)
	// MarkSessionOpen records the worker that holds the tab; false when it is not opening.
	MarkSessionOpen(ctx context.Context, id, worker string) (bool, error)
	// TouchSession counts a command and its activity.
	TouchSession(ctx context.Context, id string) error
	// EndSession ends a live session with status and reason; false when it had ended.
	EndSession(ctx context.Context, id, status, reason string) (bool, error)
	AddSessionArtifact(ctx context.Context, sessionID string, a Artifact) error
	GetSessionArtifact(ctx context.Context, sessionID, name string) (*Artifact, error)
}

// Bus carries opens, commands and replies between api and workers (sessionbus.Bus).
type Bus interface {
	PushOpen(ctx context.Context, id string) error
	PopOpen(ctx context.Context, wait time.Duration) (string, error) // "": none within wait
	PushCommand(ctx context.Context, id string, c Command) error
	PopCommand(ctx context.Context, id string, wait time.Duration) (*Command, error) // nil: none
	PushReply(ctx context.Context, id, cmdID string, r Reply) error
	WaitReply(ctx context.Context, id, cmdID string, wait time.Duration) (*Reply, error) // nil: none
	Beat(ctx context.Context, worker string, ttl time.Duration) error
	Alive(ctx context.Context, worker string) (bool, error)
	Drop(ctx context.Context, id string) error
}

// Feed publishes the sessions' events (events.Publisher).
type Feed interface {
	Publish(ctx context.Context, stream string, final bool, evs ...events.Event)
}

// Objects stores artifacts (artifacts.Store).
type Objects interface {
	Put(ctx context.Context, key string, data []byte, contentType string, opts artifacts.PutOptions) (artifacts.Object, error)
}

// Browser opens tabs (capture.Browser).
type Browser interface {
	OpenSession(ctx context.Context, o capture.SessionOptions) (*capture.Session, error)
}

// Stream is the Redis Stream of a session's feed.
func Stream(id string) string { return "snapq:{events:session:" + id + "}" }

// Feed event types.
const (
	EventSession = "session" // opened or ended: {session_id, status, reason?}
	EventCommand = "command" // a command's row: running, then ok or error
)

// SessionEvent is the data of a session event.
type SessionEvent struct {
	SessionID string    `json:"session_id"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at"`
}

// CommandEvent is the data of a command event.
type CommandEvent struct {
	SessionID string     `json:"session_id"`
	Seq       int        `json:"seq"`
	Command   string     `json:"command"`
	Args      []string   `json:"args"`
	Status    string     `json:"status"` // running | ok | error
	Excerpt   string     `json:"excerpt,omitempty"`
	Error     *ErrorInfo `json:"error,omitempty"`
	URL       string     `json:"url,omitempty"`
	Title     string     `json:"title,omitempty"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
	MS        int64      `json:"ms,omitempty"`
	At        time.Time  `json:"at"`
}

// ExcerptBytes bounds a command's excerpt in the feed.
const ExcerptBytes = 1024

// publishEnd announces that a session ended.
func publishEnd(ctx context.Context, f Feed, id, status, reason string) {
	if f == nil {
		return
	}
	f.Publish(ctx, Stream(id), true, events.Event{Type: EventSession,
		Data: SessionEvent{SessionID: id, Status: status, Reason: reason, At: time.Now().UTC()}})
}
