package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/session"
)

// Interactive sessions (package session): create, read, list, close, commands, the feed
// and the commands' files. Each command takes a slot of the key's budget (jobs.WorkSession) while it runs; the session itself counts against the key's session cap and in-flight cap.

const sessionKey = "session"

func (s *Server) routeSessions(v1 *gin.RouterGroup) {
	v1.POST("/sessions", s.h(s.readJSON("the session")), s.h(s.createSession))
	v1.GET("/sessions", s.h(s.listSessions))
	v1.GET("/sessions/:id", s.loadSession, s.h(s.getSession))
	v1.DELETE("/sessions/:id", s.loadSession, s.h(s.closeSession))
	v1.POST("/sessions/:id/commands", s.loadSession, s.h(s.readJSON("the command")), s.spend(jobs.WorkSession), s.h(s.sessionCommand))
	v1.GET("/sessions/:id/events", s.loadSession, s.h(s.sessionEvents))
	v1.GET("/sessions/:id/artifacts/:name", s.loadSession, s.h(s.sessionArtifact))
	v1.GET("/session-verbs", s.h(s.sessionVerbs))
}

// sessionVerbs is the command reference without a session (the MCP browser_help tool's):
// the verb table's rows and the `help` command's text, of every verb or of ?verb=.
func (s *Server) sessionVerbs(c *gin.Context) error {
	verb := c.Query("verb")
	if len(verb) > 64 {
		return badRequest("invalid_verb", "verb", "at most 64 characters")
	}
	rows, ok := session.VerbInfos(verb)
	if !ok {
		return badRequest("unknown_command", "verb", "no verb "+strconv.Quote(verb)+"; verbs: "+strings.Join(session.Verbs(), ", "))
	}
	text, _ := session.Help(verb)
	c.JSON(http.StatusOK, gin.H{"verbs": rows, "help": text})
	return nil
}

func (s *Server) loadSession(c *gin.Context) { loader(s, sessionKey, s.ownedSession)(c) }

// ownedSession loads a session the caller may see (another key's is missing).
func (s *Server) ownedSession(c *gin.Context, id string) (*session.Session, error) {
	if s.Sessions == nil {
		return nil, jobs.ErrNotFound
	}
	ss, err := s.Sessions.Get(c.Request.Context(), id)
	if err == nil && s.Config.Auth && ss.Owner != owner(c) {
		err = jobs.ErrNotFound
	}
	return ss, err
}

// sessionView is a session as the API shows it.
type sessionView struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	Options      session.Options `json:"options"`
	Commands     int             `json:"commands"`
	CreatedAt    time.Time       `json:"created_at"`
	LastActiveAt time.Time       `json:"last_active_at"`
	ExpiresAt    time.Time       `json:"expires_at"`
	IdleExpires  time.Time       `json:"idle_expires_at"`
	ClosedAt     *time.Time      `json:"closed_at,omitempty"`
	CloseReason  string          `json:"close_reason,omitempty"`
	URLs         sessionURLs     `json:"urls"`
}

type sessionURLs struct {
	Commands  string `json:"commands"`
	Events    string `json:"events"`
	Dashboard string `json:"dashboard"`
}

func newSessionView(ss *session.Session, base string) sessionView {
	return sessionView{ID: ss.ID, Status: ss.Status, Options: ss.Options, Commands: ss.Commands, CreatedAt: ss.CreatedAt,
		LastActiveAt: ss.LastActiveAt, ExpiresAt: ss.ExpiresAt,
		IdleExpires: ss.LastActiveAt.Add(time.Duration(ss.Options.IdleTimeoutS) * time.Second),
		ClosedAt:    ss.ClosedAt, CloseReason: ss.CloseReason,
		URLs: sessionURLs{Commands: base + "/v1/sessions/" + ss.ID + "/commands", Events: base + "/v1/sessions/" + ss.ID + "/events",
			Dashboard: base + "/#/sessions/" + ss.ID}}
}

func (s *Server) createSession(c *gin.Context) error {
	if s.Sessions == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "sessions are not enabled on this server"}
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	var o session.Options
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return badRequest("invalid_json", "body", "the session options: "+err.Error())
		}
	}
	ss, err := s.Sessions.Create(c.Request.Context(), owner(c), o)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, newSessionView(ss, s.baseURL(c)))
	return nil
}

func (s *Server) listSessions(c *gin.Context) error {
	if s.Sessions == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "sessions are not enabled on this server"}
	}
	list, err := s.Sessions.Repo.ListSessions(c.Request.Context(), s.listOwner(c), defaultPageSize)
	if err != nil {
		return err
	}
	out := make([]sessionView, 0, len(list))
	for _, ss := range list {
		out = append(out, newSessionView(ss, s.baseURL(c)))
	}
	c.JSON(http.StatusOK, gin.H{"sessions": out})
	return nil
}

func (s *Server) getSession(c *gin.Context) error {
	ss, err := loaded[*session.Session](c, sessionKey)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newSessionView(ss, s.baseURL(c)))
	return nil
}

func (s *Server) closeSession(c *gin.Context) error {
	ss, err := loaded[*session.Session](c, sessionKey)
	if err != nil {
		return err
	}
	if ss, err = s.Sessions.Close(c.Request.Context(), ss); err != nil {
		return err
	}
	c.JSON(http.StatusOK, newSessionView(ss, s.baseURL(c)))
	return nil
}

// sessionCommand runs one command; a failed command is a 200 with ok false (the model reads
// the error), a session that cannot take commands is an error status.
func (s *Server) sessionCommand(c *gin.Context) error {
	ss, err := loaded[*session.Session](c, sessionKey)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	var cmd session.Command
	if err := json.Unmarshal(body, &cmd); err != nil {
		return badRequest("invalid_json", "body", "the command: "+err.Error())
	}
	if cmd.Command == "" {
		return badRequest("invalid_command", "command", "required: a verb such as open, snapshot, click (see help)")
	}
	if cmd.Args == nil {
		cmd.Args = []string{}
	}
	r, err := s.Sessions.Exec(c.Request.Context(), ss, cmd)
	if err != nil {
		return err
	}
	base := s.baseURL(c)
	for i := range r.Artifacts {
		r.Artifacts[i].URL = base + "/v1/sessions/" + ss.ID + "/artifacts/" + r.Artifacts[i].Name
	}
	c.JSON(http.StatusOK, r)
	return nil
}

func (s *Server) sessionEvents(c *gin.Context) error {
	ss, err := loaded[*session.Session](c, sessionKey)
	if err != nil {
		return err
	}
	id, base := ss.ID, s.baseURL(c)
	load := func(ctx context.Context) (any, bool, error) {
		cur, err := s.Sessions.Get(ctx, id)
		if err != nil {
			return nil, false, err
		}
		return newSessionView(cur, base), cur.Ended(), nil
	}
	return s.serveEvents(c, sseSource{stream: session.Stream(id), load: load,
		finished: func(ctx context.Context) (bool, error) {
			_, final, err := load(ctx)
			return final, err
		},
		finalEntry: func(e events.Entry) bool {
			if e.Type != session.EventSession {
				return false
			}
			var d struct{ Status string }
			return json.Unmarshal(e.Data, &d) == nil && d.Status != session.StatusOpen && d.Status != session.StatusOpening
		},
	})
}

func (s *Server) sessionArtifact(c *gin.Context) error {
	ss, err := loaded[*session.Session](c, sessionKey)
	if err != nil {
		return err
	}
	a, err := s.Sessions.Repo.GetSessionArtifact(c.Request.Context(), ss.ID, c.Param("name"))
	if err != nil {
		return err
	}
	if s.Presigner == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "artifact downloads are not enabled"}
	}
	u, err := s.Presigner.PresignGetAs(c.Request.Context(), a.Key, a.Name, a.ContentType)
	if err != nil {
		return err
	}
	c.Header("Content-Length", "0")
	c.Header("X-Artifact-Bytes", strconv.FormatInt(a.Size, 10))
	c.Redirect(http.StatusFound, u)
	return nil
}

// isSessionError reports the session package's errors, which sessionAPIError maps.
func isSessionError(err error) bool {
	var se *session.Error
	var fe *session.FieldError
	return errors.As(err, &se) || errors.As(err, &fe) || errors.Is(err, session.ErrTooManySessions)
}

func sessionAPIError(err error) *apiError {
	var se *session.Error
	var fe *session.FieldError
	switch {
	case errors.As(err, &se):
		return &apiError{Status: se.Status, Code: se.Code, Message: se.Message}
	case errors.As(err, &fe):
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_option", Field: fe.Field, Message: fe.Message}
	}
	return &apiError{Status: http.StatusTooManyRequests, Code: "too_many_sessions", Message: err.Error(),
		Header: http.Header{"Retry-After": {"30"}}}
}
