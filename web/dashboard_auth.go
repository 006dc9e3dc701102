package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
)

// QueuesPath is where the queue-health UI (asynqmon) is mounted.
const QueuesPath = "/admin/queues"

// KeyCookie is the cookie the dashboard sets to the user's API key (the same
// value it keeps in localStorage). Browsers cannot add an Authorization header
// to an <img> or a link, so the cookie stands in for it in two places only:
// GET /v1/artifacts/:id (images and downloads, and /thumbnail, their
// previews) and the queue UI. It is set
// SameSite=Strict, so other sites cannot make a browser send it.
const KeyCookie = "snapq_key"

// artifactKeyCookie lets a GET or HEAD of /v1/artifacts/:id, or of an event
// stream (EventSource cannot send headers either), without an Authorization
// header authenticate with the dashboard's key cookie. Every other /v1 route
// ignores the cookie, so it cannot be used to change anything.
func (s *Server) artifactKeyCookie(c *gin.Context) {
	if p := c.FullPath(); !s.Config.Auth || (p != "/v1/artifacts/:id" && p != "/v1/artifacts/:id/thumbnail" && !eventRoutes[p]) ||
		c.GetHeader("Authorization") != "" {
		return
	}
	if c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead {
		return
	}
	if key, err := c.Cookie(KeyCookie); err == nil && key != "" {
		c.Request.Header.Set("Authorization", "Bearer "+key)
	}
}

// mountQueues serves s.Queues (asynqmon) under QueuesPath. With auth on it
// takes only the admin token (Config.AdminToken): as the password of HTTP
// Basic auth (any user name), as a Bearer token, or from a cookie.
func (s *Server) mountQueues(r *gin.Engine) {
	if s.Queues == nil {
		return
	}
	h := gin.WrapH(s.Queues)
	guard := []gin.HandlerFunc{s.h(s.guardQueues), s.h(s.limitAuthFailures(s.authenticateQueues)), s.h(s.rateLimit), h}
	r.Any(QueuesPath, guard...)
	r.Any(QueuesPath+"/*path", guard...)
}

func (s *Server) guardQueues(c *gin.Context) error {
	if !sameOriginWrite(c.Request) {
		// Browsers resend cached Basic credentials on cross-site requests too:
		// a change (SNAPQ_ADMIN_QUEUES=on) must come from the queue page itself.
		return &apiError{Status: http.StatusForbidden, Code: "cross_origin",
			Message: "queue changes are accepted only from the same origin"}
	}
	return nil
}

// authenticateQueues takes the admin token (see mountQueues): the queue UI
// lists every tenant's tasks. A valid API key that is not the token gets 403
// admin_required; anything else 401. The caller is recorded for the rate limit.
func (s *Server) authenticateQueues(c *gin.Context) error {
	if !s.Config.Auth {
		c.Set(ownerKey, "")
		return nil
	}
	secret := queuesCredential(c)
	if secret == "" {
		return queuesUnauthorized("sign in with any user name and the admin token (SNAPQ_ADMIN_TOKEN) as the password")
	}
	if s.isAdmin(secret) {
		c.Set(ownerKey, "admin")
		return nil
	}
	id, err := s.validKey(c.Request.Context(), secret)
	if err != nil {
		return err
	}
	if id == "" {
		return queuesUnauthorized("neither the admin token nor a valid API key")
	}
	return adminRequired()
}

// sameOriginWrite reports whether r is a safe method, or an unsafe one sent
// by a page of this origin (or by a non-browser client, which sends neither
// Sec-Fetch-Site nor Origin).
func sameOriginWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		return err == nil && u.Host == r.Host
	}
	return true
}

// queuesCredential returns the secret (admin token or API key) a queue-UI
// request carries, or "".
func queuesCredential(c *gin.Context) string {
	if _, pw, ok := c.Request.BasicAuth(); ok {
		return pw
	}
	const bearer = "bearer "
	if h := c.GetHeader("Authorization"); len(h) > len(bearer) && strings.EqualFold(h[:len(bearer)], bearer) {
		return strings.TrimSpace(h[len(bearer):])
	}
	if key, err := c.Cookie(KeyCookie); err == nil {
		return key
	}
	return ""
}

// queuesUnauthorized asks for Basic credentials, so a browser opening
// /admin/queues directly shows its sign-in prompt.
func queuesUnauthorized(msg string) error {
	return &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: msg,
		Header: http.Header{"Www-Authenticate": {`Basic realm="snapq queues", charset="UTF-8"`}}}
}

// validKey returns the id of the unrevoked API key secret is, or "".
func (s *Server) validKey(ctx context.Context, secret string) (string, error) {
	if !jobs.LooksLikeKey(secret) {
		return "", nil
	}
	k, err := s.Keys.KeyBySHA256(ctx, jobs.HashKey(secret))
	if errors.Is(err, jobs.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up api key: %w", err)
	}
	if err := s.Keys.TouchKey(ctx, k.ID); err != nil {
		s.logger().Warn("record api key use", "key", k.Prefix, "err", err)
	}
	return k.ID, nil
}
