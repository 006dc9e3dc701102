package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
)

// RateLimiter counts requests per client. ratelimit.Limiter implements it.
type RateLimiter interface {
	Allow(ctx context.Context, key string) (allowed bool, retryAfter time.Duration, err error)
}

// FailureLimiter counts failures per client: Allow counts one, Blocked
// reports, without counting, whether the client is past its limit.
// ratelimit.Limiter implements it.
type FailureLimiter interface {
	RateLimiter
	Blocked(ctx context.Context, key string) (blocked bool, retryAfter time.Duration, err error)
}

// KeyReader checks API keys; store.Store implements it.
type KeyReader interface {
	// KeyBySHA256 returns the unrevoked key with that hash, or jobs.ErrNotFound.
	KeyBySHA256(ctx context.Context, sum string) (*jobs.APIKey, error)
	TouchKey(ctx context.Context, id string) error
}

const (
	ownerKey     = "snapq.owner"   // gin context key: the caller's API key id, "" without auth
	callerKeyKey = "snapq.api_key" // gin context key: the caller's *jobs.APIKey, unset without auth
)

// authenticate requires a valid API key unless auth is off.
func (s *Server) authenticate(c *gin.Context) error {
	if !s.Config.Auth {
		c.Set(ownerKey, "")
		return nil
	}
	const bearer = "bearer "
	h := c.GetHeader("Authorization")
	if len(h) <= len(bearer) || !strings.EqualFold(h[:len(bearer)], bearer) {
		return unauthorized("send your API key as Authorization: Bearer <key>")
	}
	secret := strings.TrimSpace(h[len(bearer):])
	if !jobs.LooksLikeKey(secret) {
		return unauthorized("the API key is not valid")
	}
	k, err := s.Keys.KeyBySHA256(c.Request.Context(), jobs.HashKey(secret))
	if errors.Is(err, jobs.ErrNotFound) {
		return unauthorized("the API key is not valid or was revoked")
	}
	if err != nil {
		return fmt.Errorf("look up api key: %w", err)
	}
	if err := s.Keys.TouchKey(c.Request.Context(), k.ID); err != nil {
		s.logger().Warn("record api key use", "key", k.Prefix, "err", err)
	}
	c.Set(ownerKey, k.ID)
	c.Set(callerKeyKey, k)
	return nil
}

// unauthorized is the 401 of /v1, asking for a Bearer token.
func unauthorized(msg string) error {
	return &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: msg,
		Header: http.Header{"Www-Authenticate": {`Bearer realm="snapq"`}}}
}

// rateLimit applies the per-key request rate (per client address without a
// key) to /v1, /metrics and the queue UI.
func (s *Server) rateLimit(c *gin.Context) error {
	if s.Limiter == nil {
		return nil
	}
	key := owner(c)
	if key == "" {
		key = "ip:" + c.ClientIP()
	}
	ok, retry, err := s.Limiter.Allow(c.Request.Context(), key)
	if err != nil {
		s.limiterDown("requests", err)
		return nil
	}
	if ok {
		return nil
	}
	return tooManyRequests(retry, "too many requests for this API key")
}

// authFailureKey is the limiter key of a client address's failed authentications.
const authFailureKey = "authfail:ip:"

// limitAuthFailures wraps an authentication check (authenticate,
// authenticateQueues) with the per-address limit of failures: each 401 counts
// one, and an address past its limit gets 429 before its key is looked at,
// valid or not, so keys cannot be guessed at speed from one address.
func (s *Server) limitAuthFailures(check handler) handler {
	return func(c *gin.Context) error {
		if s.AuthFailures == nil || !s.Config.Auth {
			return check(c)
		}
		ctx, key := c.Request.Context(), authFailureKey+c.ClientIP()
		blocked, retry, err := s.AuthFailures.Blocked(ctx, key)
		switch {
		case err != nil:
			s.limiterDown("auth_failures", err)
		case blocked:
			return tooManyRequests(retry, "too many failed authentications from this address")
		}
		err = check(c)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			if _, _, lerr := s.AuthFailures.Allow(ctx, key); lerr != nil {
				s.limiterDown("auth_failures", lerr)
			}
		}
		return err
	}
}

// limiterDown is the one place that decides what a limiter error means: the
// request goes through (fail open), with a warning and
// snapq_rate_limit_errors_total{limiter}. docs/operating/security.md says why.
func (s *Server) limiterDown(limiter string, err error) {
	s.logger().Warn("rate limiter unavailable; request allowed", "limiter", limiter, "err", err)
	s.Metrics.limiterError(limiter)
}

// tooManyRequests is the 429 of the rate limits, with Retry-After in whole seconds.
func tooManyRequests(retry time.Duration, msg string) error {
	secs := max(int(math.Ceil(retry.Seconds())), 1)
	return &apiError{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Message: fmt.Sprintf("%s; retry after %d s", msg, secs),
		Header:  http.Header{"Retry-After": {strconv.Itoa(secs)}}}
}

// owner returns the caller's API key id ("" without auth).
func owner(c *gin.Context) string { return c.GetString(ownerKey) }

// listOwner is the owner filter for lists: everyone's batches without auth.
func (s *Server) listOwner(c *gin.Context) string {
	if !s.Config.Auth {
		return jobs.AnyOwner
	}
	return owner(c)
}

// visible reports whether the caller may see batch b. Another key's batch is
// reported as missing, never as forbidden, so ids cannot be probed.
func (s *Server) visible(c *gin.Context, b *jobs.Batch) bool {
	return !s.Config.Auth || b.OwnerKeyID == owner(c)
}

// cors answers only the origins in Config.CORSOrigins; it never reflects an
// arbitrary Origin.
func (s *Server) cors(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if origin == "" {
		return
	}
	c.Header("Vary", "Origin")
	allowed := false
	for _, o := range s.Config.CORSOrigins {
		if o == origin {
			allowed = true
			break
		}
	}
	if allowed {
		c.Header("Access-Control-Allow-Origin", origin)
		c.Header("Access-Control-Expose-Headers", "Location, Retry-After, Idempotent-Replayed")
	}
	if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
		if allowed {
			c.Header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			c.Header("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key")
			c.Header("Access-Control-Max-Age", "600")
		}
		c.AbortWithStatus(http.StatusNoContent)
	}
}
