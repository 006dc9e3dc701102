package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// Service is the api's side: it admits sessions, hands their commands to the owning
// worker and waits for the replies, and reaps the sessions of dead workers.
type Service struct {
	Repo Repo
	Bus  Bus
	Feed Feed
	// PerKey caps a key's open sessions (SNAPQ_SESSIONS_PER_KEY, default DefaultPerKey).
	PerKey int
	// MaxInFlight is the key's in-flight cap shared with its unfinished jobs (0: none).
	MaxInFlight int
	// OpenWait bounds the wait for a worker to open the tab (default DefaultOpenWait).
	OpenWait time.Duration
	// CommandWait bounds the wait for a reply (default DefaultCommandTimeout + 15 s).
	CommandWait time.Duration
	Logger      *slog.Logger
}

// Defaults of the Service.
const (
	DefaultPerKey   = 3
	DefaultOpenWait = 30 * time.Second
)

// NewID is a session id.
func NewID() string { return uuid.NewString() }

// Create admits and opens a session: 429 past the key's caps, 503 when no worker opened
// its tab within OpenWait.
func (s *Service) Create(ctx context.Context, owner string, o Options) (*Session, error) {
	if err := o.Normalize(); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	ss := &Session{ID: NewID(), Owner: owner, Status: StatusOpening, Options: o, CreatedAt: now, LastActiveAt: now,
		ExpiresAt: now.Add(time.Duration(o.MaxLifetimeS) * time.Second)}
	perKey := s.PerKey
	if perKey == 0 {
		perKey = DefaultPerKey
	}
	if err := s.Repo.CreateSession(ctx, ss, perKey, s.MaxInFlight); err != nil {
		return nil, err
	}
	if err := s.Bus.PushOpen(ctx, ss.ID); err != nil {
		s.end(ctx, ss.ID, StatusFailed, "could not reach the workers")
		return nil, err
	}
	wait := s.OpenWait
	if wait <= 0 {
		wait = DefaultOpenWait
	}
	r, err := s.Bus.WaitReply(ctx, ss.ID, OpenReply, wait)
	if err != nil || r == nil {
		s.end(context.WithoutCancel(ctx), ss.ID, StatusFailed, "no worker opened the session in time")
		if err != nil {
			return nil, err
		}
		return nil, &Error{Status: http.StatusServiceUnavailable, Code: "no_session_worker",
			Message: "no worker had a free session tab within " + wait.String() + "; retry later"}
	}
	if !r.OK {
		return nil, &Error{Status: http.StatusBadGateway, Code: r.Error.Code, Message: r.Error.Message}
	}
	return s.Repo.GetSession(ctx, ss.ID)
}

// Get reads a session; a live one whose worker is gone is ended as lost first.
func (s *Service) Get(ctx context.Context, id string) (*Session, error) {
	ss, err := s.Repo.GetSession(ctx, id)
	if err != nil || ss.Status != StatusOpen {
		return ss, err
	}
	if alive, err := s.Bus.Alive(ctx, ss.WorkerID); err == nil && !alive {
		s.end(ctx, id, StatusLost, ReasonLost)
		return s.Repo.GetSession(ctx, id)
	}
	return ss, nil
}

// Exec sends cmd to the session's worker and waits for its reply.
func (s *Service) Exec(ctx context.Context, ss *Session, cmd Command) (*Reply, error) {
	if err := Validate(cmd); err != nil {
		var ce *commandError
		errors.As(err, &ce)
		return &Reply{Error: &ErrorInfo{Code: ce.code, Message: ce.msg}, Reply: ce.msg}, nil
	}
	if ss.Ended() {
		return nil, endedError(ss)
	}
	if ss.Status != StatusOpen {
		return nil, &Error{Status: http.StatusConflict, Code: "session_opening", Message: "the session is still opening"}
	}
	cmd.ID = randomID()
	if err := s.Bus.PushCommand(ctx, ss.ID, cmd); err != nil {
		return nil, err
	}
	wait := s.CommandWait
	if wait <= 0 {
		wait = DefaultCommandTimeout + 15*time.Second
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		// Short waits, so a worker that dies meanwhile is noticed within a second.
		r, err := s.Bus.WaitReply(ctx, ss.ID, cmd.ID, time.Second)
		if err != nil || r != nil {
			return r, err
		}
		if err := s.checkAlive(ctx, ss); err != nil {
			return nil, err
		}
	}
	return nil, &Error{Status: http.StatusGatewayTimeout, Code: "command_timeout", Message: "no reply from the session's worker in " + wait.String()}
}

// checkAlive ends ss as lost when its worker is gone, or when it ended meanwhile.
func (s *Service) checkAlive(ctx context.Context, ss *Session) error {
	alive, err := s.Bus.Alive(ctx, ss.WorkerID)
	if err != nil {
		return err
	}
	if !alive {
		s.end(ctx, ss.ID, StatusLost, ReasonLost)
		return lostError()
	}
	cur, err := s.Repo.GetSession(ctx, ss.ID)
	if err == nil && cur.Ended() {
		return endedError(cur)
	}
	return err
}

// Close ends the session: its worker closes the tab (the "close" command), or, when the
// worker is gone, it is recorded as lost.
func (s *Service) Close(ctx context.Context, ss *Session) (*Session, error) {
	if ss.Ended() {
		return ss, nil
	}
	if ss.Status == StatusOpen {
		if _, err := s.Exec(ctx, ss, Command{Command: "close"}); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				return nil, err
			}
		}
	}
	// An opening session (or one whose close got no answer) is ended here.
	s.end(ctx, ss.ID, StatusClosed, ReasonClient)
	return s.Repo.GetSession(ctx, ss.ID)
}

// Reap ends, every ReapInterval until ctx ends, the live sessions whose worker is gone
// and those that never opened.
func (s *Service) Reap(ctx context.Context) {
	t := time.NewTicker(ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.reapOnce(ctx); err != nil && ctx.Err() == nil {
			s.log().Warn("reap sessions", "err", err)
		}
	}
}

func (s *Service) reapOnce(ctx context.Context) error {
	live, err := s.Repo.LiveSessions(ctx)
	if err != nil {
		return err
	}
	for _, ss := range live {
		if ss.Status == StatusOpening {
			if time.Since(ss.CreatedAt) > 2*DefaultOpenWait {
				s.end(ctx, ss.ID, StatusFailed, "no worker opened the session")
			}
			continue
		}
		alive, err := s.Bus.Alive(ctx, ss.WorkerID)
		if err != nil {
			return err
		}
		if !alive {
			s.end(ctx, ss.ID, StatusLost, ReasonLost)
		}
	}
	return nil
}

// end records the end and announces it when this call ended it.
func (s *Service) end(ctx context.Context, id, status, reason string) {
	ended, err := s.Repo.EndSession(ctx, id, status, reason)
	if err != nil {
		s.log().Warn("end session", "session_id", id, "err", err)
		return
	}
	if ended {
		publishEnd(ctx, s.Feed, id, status, reason)
		_ = s.Bus.Drop(ctx, id)
	}
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Service) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
