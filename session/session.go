package session

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/snapq/snapq/capture"
)

// Statuses of a session.
const (
	StatusOpening = "opening" // waiting for a worker to open its tab
	StatusOpen    = "open"
	StatusClosed  = "closed" // closed by its client, idle or lifetime expiry, or a worker's drain
	StatusLost    = "lost"   // its worker died: the tab is gone
	StatusFailed  = "failed" // no tab could be opened
)

// Reasons a session ended (Session.CloseReason).
const (
	ReasonClient   = "closed_by_client"
	ReasonIdle     = "idle_timeout"
	ReasonLifetime = "max_lifetime"
	ReasonShutdown = "worker_shutdown"
	ReasonLost     = "session_lost"
	ReasonCrashed  = "browser_crashed"
)

// Defaults and bounds of the options.
const (
	DefaultIdleTimeout = 300 * time.Second
	MaxIdleTimeout     = 1800 * time.Second
	DefaultLifetime    = 3600 * time.Second
	MaxLifetime        = 4 * time.Hour
	DefaultWidth       = 1280
	DefaultHeight      = 800
)

// Session is one session's record.
type Session struct {
	ID           string
	Owner        string // API key id; "" without auth
	Status       string
	WorkerID     string
	Options      Options
	Commands     int
	CreatedAt    time.Time
	LastActiveAt time.Time
	ExpiresAt    time.Time // the end of its max lifetime
	ClosedAt     *time.Time
	CloseReason  string
}

// Ended reports whether the session is over.
func (s *Session) Ended() bool {
	return s.Status != StatusOpening && s.Status != StatusOpen
}

// Viewport is a session's window.
type Viewport struct {
	Width             int     `json:"width,omitempty"`
	Height            int     `json:"height,omitempty"`
	DeviceScaleFactor float64 `json:"device_scale_factor,omitempty"`
}

// Emulation is what the page is told about its device.
type Emulation struct {
	UserAgent   string `json:"user_agent,omitempty"`
	Mobile      bool   `json:"mobile,omitempty"`
	ColorScheme string `json:"color_scheme,omitempty"` // light | dark
	Locale      string `json:"locale,omitempty"`
	Timezone    string `json:"timezone,omitempty"`
}

// Block lists what the session's pages may not load.
type Block struct {
	ResourceTypes []string `json:"resource_types,omitempty"`
	URLPatterns   []string `json:"url_patterns,omitempty"`
}

// Options are the body of POST /v1/sessions.
type Options struct {
	Viewport     Viewport  `json:"viewport"`
	Emulation    Emulation `json:"emulation"`
	AuthProfile  string    `json:"auth_profile,omitempty"`
	Block        Block     `json:"block"`
	IdleTimeoutS int       `json:"idle_timeout_s"`
	MaxLifetimeS int       `json:"max_lifetime_s"`
}

// FieldError is bad input, naming the field.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Normalize fills the defaults and checks the bounds.
func (o *Options) Normalize() error {
	if o.IdleTimeoutS == 0 {
		o.IdleTimeoutS = int(DefaultIdleTimeout / time.Second)
	}
	if o.IdleTimeoutS < 5 || o.IdleTimeoutS > int(MaxIdleTimeout/time.Second) {
		return &FieldError{"idle_timeout_s", fmt.Sprintf("5 to %d seconds", int(MaxIdleTimeout/time.Second))}
	}
	if o.MaxLifetimeS == 0 {
		o.MaxLifetimeS = int(DefaultLifetime / time.Second)
	}
	if o.MaxLifetimeS < 10 || o.MaxLifetimeS > int(MaxLifetime/time.Second) {
		return &FieldError{"max_lifetime_s", fmt.Sprintf("10 to %d seconds", int(MaxLifetime/time.Second))}
	}
	v := &o.Viewport
	v.Width, v.Height = orDefault(v.Width, DefaultWidth), orDefault(v.Height, DefaultHeight)
	if v.Width < 200 || v.Width > 3840 {
		return &FieldError{"viewport.width", "200 to 3840 CSS pixels"}
	}
	if v.Height < 200 || v.Height > 2160 {
		return &FieldError{"viewport.height", "200 to 2160 CSS pixels"}
	}
	if v.DeviceScaleFactor == 0 {
		v.DeviceScaleFactor = 1
	}
	if v.DeviceScaleFactor < 0.5 || v.DeviceScaleFactor > 3 {
		return &FieldError{"viewport.device_scale_factor", "0.5 to 3"}
	}
	if o.AuthProfile != "" {
		return &FieldError{"auth_profile", "sessions cannot start logged in with an auth profile yet; log in with commands"}
	}
	if c := o.Emulation.ColorScheme; c != "" && c != "light" && c != "dark" {
		return &FieldError{"emulation.color_scheme", "light or dark"}
	}
	return o.validateBlock()
}

func (o *Options) validateBlock() error {
	for i, t := range o.Block.ResourceTypes {
		if !contains(capture.ResourceTypes(), t) {
			return &FieldError{fmt.Sprintf("block.resource_types[%d]", i), "unknown resource type " + t}
		}
	}
	if len(o.Block.URLPatterns) > 50 {
		return &FieldError{"block.url_patterns", "at most 50 patterns"}
	}
	for i, p := range o.Block.URLPatterns {
		if p == "" || len(p) > 500 {
			return &FieldError{fmt.Sprintf("block.url_patterns[%d]", i), "1 to 500 characters"}
		}
	}
	return nil
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// captureOptions are o for capture.Browser.OpenSession.
func (o Options) captureOptions() capture.SessionOptions {
	e := o.Emulation
	return capture.SessionOptions{
		Viewport: capture.Viewport{Width: o.Viewport.Width, Height: o.Viewport.Height, DeviceScaleFactor: o.Viewport.DeviceScaleFactor},
		Emulate: capture.Emulate{UserAgent: e.UserAgent, Mobile: e.Mobile, ColorScheme: e.ColorScheme, Locale: e.Locale,
			Timezone: e.Timezone},
		Block: capture.Block{ResourceTypes: o.Block.ResourceTypes, URLPatterns: o.Block.URLPatterns},
	}
}

// Error is a failure of the sessions API with its HTTP status and stable code.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errors of the API.
var (
	ErrNotFound        = errors.New("no such session")
	ErrTooManySessions = errors.New("too many open sessions for this API key")
)

func lostError() *Error {
	return &Error{Status: http.StatusGone, Code: ReasonLost, Message: "the session's worker went away; its tab is gone"}
}

func endedError(s *Session) *Error {
	if s.Status == StatusLost {
		return lostError()
	}
	return &Error{Status: http.StatusConflict, Code: "session_closed",
		Message: fmt.Sprintf("the session is %s (%s)", s.Status, s.CloseReason)}
}
