package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultSessionIdle is how long an MCP session over HTTP lives without a
// request before it is closed (and its slot of the per-key session cap given
// back).
const DefaultSessionIdle = 10 * time.Minute

// HTTPConfig configures the streamable HTTP door (/mcp on the api).
type HTTPConfig struct {
	// API is the api's router: tool calls' requests are served by it, in
	// this process (inprocess.go). Required.
	API http.Handler
	// MaxBodyBytes caps one request's body (default 1 MiB).
	MaxBodyBytes int64
	// SessionIdle closes a session without requests for this long (default
	// DefaultSessionIdle).
	SessionIdle time.Duration
	// Wait is Config.Wait of the tools.
	Wait    time.Duration
	Version string
	Logger  *slog.Logger
}

// Handler serves MCP over streamable HTTP: sessions, each bound to the API
// key that opened it.
type Handler struct {
	srv  *sdk.Server
	sdk  http.Handler // the SDK's handler, for requests without a key (auth off)
	keyd http.Handler // the same, binding sessions to the caller's key
}

// NewHandler returns the /mcp door's handler.
func NewHandler(cfg HTTPConfig) (*Handler, error) {
	if cfg.API == nil {
		return nil, fmt.Errorf("mcp: HTTPConfig.API is required")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	p := &inProcess{api: cfg.API, remote: http.DefaultTransport}
	srv, err := NewServer(Config{Caller: p.caller, Version: cfg.Version, Wait: cfg.Wait})
	if err != nil {
		return nil, err
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		SessionTimeout: cfg.SessionIdle, MaxRequestBodyBytes: cfg.MaxBodyBytes, Logger: cfg.Logger,
		// The api checks the Host itself (web's browser boundary), for every route alike.
		DisableLocalhostProtection: true,
	})
	keyd := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		// The api has authenticated the key; the token info binds the session to it.
		return &auth.TokenInfo{UserID: ownerFrom(ctx), Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)(h)
	return &Handler{srv: srv, sdk: h, keyd: keyd}, nil
}

type ownerKey struct{}

func ownerFrom(ctx context.Context) string { s, _ := ctx.Value(ownerKey{}).(string); return s }

// opensSession reports whether r would open a new MCP session (a POST without
// Mcp-Session-Id: an initialize).
func opensSession(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
}

// Serve serves one /mcp request of an authenticated caller: owner is its API
// key's id ("" without auth), admit takes a slot of the key's session cap for
// a request that opens a session (opensSession) — its release runs when the
// session ends — and refuses with an error before any work.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, owner string, admit func() (func(), error)) error {
	origin := "http://" + r.Host
	if r.TLS != nil {
		origin = "https://" + r.Host
	}
	r.Header.Set(originHeader, origin)
	r.Header.Set(peerHeader, r.RemoteAddr)
	next := h.sdk
	if owner != "" {
		r = r.WithContext(context.WithValue(r.Context(), ownerKey{}, owner))
		next = h.keyd
	}
	if !opensSession(r) {
		next.ServeHTTP(w, r)
		return nil
	}
	release, err := admit()
	if err != nil {
		return err
	}
	next.ServeHTTP(w, r)
	h.holdUntilClosed(w.Header().Get("Mcp-Session-Id"), release)
	return nil
}

// holdUntilClosed runs release when the session id ends (closed by the
// client, idle, or never made).
func (h *Handler) holdUntilClosed(id string, release func()) {
	if id != "" {
		for ss := range h.srv.Sessions() {
			if ss.ID() == id {
				go func() {
					defer release()
					_ = ss.Wait()
				}()
				return
			}
		}
	}
	release()
}
