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

const ownerKey = "snapq.owner" // gin context key: the caller's API key id, "" without auth

// authenticate requires a valid API key unless auth is off.
func (s *Server) authenticate(c *gin.Context) {
	if !s.Config.Auth {
		c.Set(ownerKey, "")
		return
	}
	const bearer = "bearer "
	h := c.GetHeader("Authorization")
	if len(h) <= len(bearer) || !strings.EqualFold(h[:len(bearer)], bearer) {
		s.unauthorized(c, "send your API key as Authorization: Bearer <key>")
		return
	}
	secret := strings.TrimSpace(h[len(bearer):])
	if !jobs.LooksLikeKey(secret) {
		s.unauthorized(c, "the API key is not valid")
		return
	}
	k, err := s.Keys.KeyBySHA256(c.Request.Context(), jobs.HashKey(secret))
	if errors.Is(err, jobs.ErrNotFound) {
		s.unauthorized(c, "the API key is not valid or was revoked")
		return
	}
	if err != nil {
		writeError(c, err)
		return
	}
	if err := s.Keys.TouchKey(c.Request.Context(), k.ID); err != nil {
		s.logger().Warn("record api key use", "key", k.Prefix, "err", err)
	}
	c.Set(ownerKey, k.ID)
}

func (s *Server) unauthorized(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", `Bearer realm="snapq"`)
	c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": apiError{Code: "unauthorized", Message: msg}})
}

// rateLimit applies the per-key request rate (per client address without auth).
func (s *Server) rateLimit(c *gin.Context) {
	if s.Limiter == nil {
		return
	}
	key := owner(c)
	if key == "" {
		key = "ip:" + c.ClientIP()
	}
	ok, retry, err := s.Limiter.Allow(c.Request.Context(), key)
	if err != nil {
		// Redis trouble must not take the read API down; log and let it pass.
		s.logger().Warn("rate limiter unavailable; request allowed", "err", err)
		return
	}
	if !ok {
		secs := int(math.Ceil(retry.Seconds()))
		c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
		c.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{"error": apiError{Code: "rate_limited",
			Message: fmt.Sprintf("too many requests for this API key; retry after %d s", max(secs, 1))}})
	}
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
