package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
)

// SessionOptions are the options of a new interactive session (POST /v1/sessions); zero
// values take the server's defaults.
type SessionOptions struct {
	Viewport     *SessionViewport  `json:"viewport,omitempty"`
	Emulation    *SessionEmulation `json:"emulation,omitempty"`
	AuthProfile  string            `json:"auth_profile,omitempty"`
	Block        *SessionBlock     `json:"block,omitempty"`
	IdleTimeoutS int               `json:"idle_timeout_s,omitempty"`
	MaxLifetimeS int               `json:"max_lifetime_s,omitempty"`
}

// SessionViewport is a session's window.
type SessionViewport struct {
	Width             int     `json:"width,omitempty"`
	Height            int     `json:"height,omitempty"`
	DeviceScaleFactor float64 `json:"device_scale_factor,omitempty"`
}

// SessionEmulation is what a session's pages are told about the device.
type SessionEmulation struct {
	UserAgent   string `json:"user_agent,omitempty"`
	Mobile      bool   `json:"mobile,omitempty"`
	ColorScheme string `json:"color_scheme,omitempty"`
	Locale      string `json:"locale,omitempty"`
	Timezone    string `json:"timezone,omitempty"`
}

// SessionBlock is what a session's pages may not load.
type SessionBlock struct {
	ResourceTypes []string `json:"resource_types,omitempty"`
	URLPatterns   []string `json:"url_patterns,omitempty"`
}

// Session is an interactive session as the API shows it.
type Session struct {
	ID           string         `json:"id"`
	Status       string         `json:"status"` // opening, open, closed, lost, failed
	Options      SessionOptions `json:"options"`
	Commands     int            `json:"commands"`
	CreatedAt    time.Time      `json:"created_at"`
	LastActiveAt time.Time      `json:"last_active_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
	IdleExpires  time.Time      `json:"idle_expires_at"`
	ClosedAt     *time.Time     `json:"closed_at,omitempty"`
	CloseReason  string         `json:"close_reason,omitempty"`
	URLs         struct {
		Commands  string `json:"commands"`
		Events    string `json:"events"`
		Dashboard string `json:"dashboard"`
	} `json:"urls"`
}

// SessionReply is a command's answer.
type SessionReply struct {
	OK        bool   `json:"ok"`
	Reply     string `json:"reply"`
	Truncated bool   `json:"truncated"`
	URL       string `json:"url"`
	Title     string `json:"title"`
	Artifacts []struct {
		Name        string `json:"name"`
		Kind        string `json:"kind"`
		ContentType string `json:"content_type"`
		Size        int64  `json:"size"`
		URL         string `json:"url"`
	} `json:"artifacts,omitempty"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	Seq int   `json:"seq"`
	MS  int64 `json:"ms"`
}

// CreateSession opens a session; it returns once the session's tab is open.
func (c *Client) CreateSession(ctx context.Context, o SessionOptions) (*Session, error) {
	var s Session
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/sessions", body: o, want: http.StatusCreated}, &s)
	return &s, err
}

// GetSession reads a session.
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + escape(id)}, &s)
	return &s, err
}

// ListSessions lists the key's sessions, newest first.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	var out struct {
		Sessions []Session `json:"sessions"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/sessions"}, &out)
	return out.Sessions, err
}

// CloseSession closes a session and frees its tab.
func (c *Client) CloseSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/sessions/" + escape(id)}, &s)
	return &s, err
}

// Exec runs one command in a session. A command that failed is a reply with OK false and
// its Error (not a Go error): the caller reads it and corrects itself.
func (c *Client) Exec(ctx context.Context, id, command string, args ...string) (*SessionReply, error) {
	if args == nil {
		args = []string{}
	}
	var r SessionReply
	body := map[string]any{"command": command, "args": args}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/sessions/" + escape(id) + "/commands", body: body}, &r)
	return &r, err
}

// SessionEvents follows a session's feed (command rows, open and end) and hands each event
// to handle until the session ends, handle returns false, or ctx ends.
func (c *Client) SessionEvents(ctx context.Context, id string, handle func(Event) bool) error {
	err := c.follow(ctx, "/v1/sessions/"+escape(id)+"/events", func(e Event) (bool, error) {
		return !handle(e) || e.Type == "done", nil
	}, func() bool { return false })
	if errors.Is(err, errNoStream) {
		return fmt.Errorf("the session's feed is not available")
	}
	return err
}

// ParseCommandLine splits a shell-like command line ("fill e3 'Ada Lovelace'") into the
// verb and its arguments: whitespace separates, single and double quotes group, a
// backslash escapes the next character outside single quotes.
func ParseCommandLine(line string) (string, []string, error) {
	var words []string
	var cur strings.Builder
	inWord, quote, escaped := false, rune(0), false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case unicode.IsSpace(r):
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return "", nil, errors.New("unterminated quote or escape")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return "", nil, nil
	}
	return words[0], words[1:], nil
}

// OpenSessionArtifact streams a file a session's command stored (a screenshot segment, a
// PDF), by its name in the reply: GET /v1/sessions/:id/artifacts/:name, a redirect to the
// object.
func (c *Client) OpenSessionArtifact(ctx context.Context, id, name string) (*ArtifactBody, error) {
	return c.openRedirected(ctx, "/v1/sessions/"+escape(id)+"/artifacts/"+escape(name))
}

// SessionVerb is one row of the sessions' verb table.
type SessionVerb struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases"`
	Usage   string   `json:"usage"`
	Help    string   `json:"help"`
}

// SessionVerbs is the sessions' command reference (GET /v1/session-verbs): the table and
// its text, the same as the `help` command's.
type SessionVerbs struct {
	Verbs []SessionVerb `json:"verbs"`
	Help  string        `json:"help"`
}

// SessionHelp reads the command reference, of every verb or (verb not "") of one; no
// session is needed.
func (c *Client) SessionHelp(ctx context.Context, verb string) (*SessionVerbs, error) {
	req := request{method: http.MethodGet, path: "/v1/session-verbs"}
	if verb != "" {
		req.query = url.Values{"verb": {verb}}
	}
	var out SessionVerbs
	err := c.do(ctx, req, &out)
	return &out, err
}
