package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/web/browserless"
)

// Browserless-compatible endpoints (docs/agents.md): POST <prefix>/content,
// /screenshot and /pdf, also under <prefix>/chromium/ as Browserless v2
// serves them. The body is mapped onto one snapq target (web/browserless)
// and runs the path of POST /v1/capture: the same validation, egress guard,
// in-flight cap, rate limit, interactive lane, artifacts and events.

// DefaultBrowserlessPrefix is where the endpoints are mounted by default
// (SNAPQ_BROWSERLESS_PREFIX).
const DefaultBrowserlessPrefix = "/compat/browserless"

// browserlessTypes are the content types answering each route (the
// screenshot's by its format).
var browserlessTypes = map[string]string{
	browserless.RouteContent: "text/html",
	browserless.RoutePDF:     "application/pdf",
	"png":                    "image/png",
	"jpeg":                   "image/jpeg",
	"webp":                   "image/webp",
}

// browserlessQuery are the query parameters accepted (Browserless's own:
// token, timeout; trackingId is accepted and not used).
var browserlessQuery = map[string]bool{"token": true, "timeout": true, "trackingId": true}

// ValidBrowserlessPrefix checks a mount prefix: "" (none), or a path of its
// own outside the API's.
func ValidBrowserlessPrefix(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, ":*?# ") || p == "/" || p == "/v1" || strings.HasPrefix(p, "/v1/") {
		return fmt.Errorf("SNAPQ_BROWSERLESS_PREFIX=%q: want a path such as %s outside /v1, or off", p, DefaultBrowserlessPrefix)
	}
	return nil
}

// routeBrowserless mounts the endpoints under Config.BrowserlessPrefix
// ("": none).
func (s *Server) routeBrowserless(r *gin.Engine) {
	prefix := strings.TrimSuffix(s.Config.BrowserlessPrefix, "/")
	if prefix == "" {
		return
	}
	g := r.Group(prefix, s.h(s.readJSON("the Browserless request")), s.h(browserlessToken),
		s.h(s.limitAuthFailures(s.authenticate)), s.h(s.rateLimit))
	for _, route := range browserless.Routes() {
		g.POST("/"+route, s.h(s.browserless(route)))
		g.POST("/chromium/"+route, s.h(s.browserless(route)))
	}
}

// browserlessToken makes the API key Browserless clients send as ?token=
// or the body's token the request's bearer token, unless an Authorization
// header is there already.
func browserlessToken(c *gin.Context) error {
	if c.GetHeader("Authorization") != "" {
		return nil
	}
	token := c.Query("token")
	if token == "" {
		body, err := loaded[[]byte](c, bodyKey)
		if err != nil {
			return err
		}
		var b struct {
			Token string `json:"token"`
		}
		_ = json.Unmarshal(body, &b) // a malformed body is reported by the handler
		token = b.Token
	}
	if token != "" {
		c.Request.Header.Set("Authorization", "Bearer "+token)
	}
	return nil
}

// browserless answers one route.
func (s *Server) browserless(route string) handler {
	return func(c *gin.Context) error {
		wait, err := browserlessWait(c)
		if err != nil {
			return err
		}
		body, err := loaded[[]byte](c, bodyKey)
		if err != nil {
			return err
		}
		req, err := browserless.Parse(route, body)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(struct {
			jobs.TargetInput
			WaitMS int64 `json:"wait_ms"`
		}{req.Target, wait.Milliseconds()})
		if err != nil {
			return err
		}
		b, j, wait, err := s.Service.SubmitCapture(c.Request.Context(), jobs.CaptureSubmission{Body: raw, Owner: owner(c),
			Output: req.Output, Format: req.Format})
		if err != nil {
			return req.Rename(err)
		}
		allowWait(c, wait)
		if j, err = s.awaitJob(c.Request.Context(), b.ID, j.ID, wait); err != nil {
			return err
		}
		return s.answerBrowserless(c, j, route, req.Format)
	}
}

// browserlessWait checks the query and reads ?timeout= (ms, Browserless's
// request timeout): how long the call waits for its capture, default 30 s,
// at most jobs.MaxCaptureWait.
func browserlessWait(c *gin.Context) (time.Duration, error) {
	for k := range c.Request.URL.Query() {
		if !browserlessQuery[k] {
			return 0, badRequest("unknown_field", k, "the query takes token and timeout only (launch options and ad blocking are not supported)")
		}
	}
	v := c.Query("timeout")
	if v == "" {
		return jobs.DefaultCaptureWait, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 1 || time.Duration(ms)*time.Millisecond > jobs.MaxCaptureWait {
		return 0, badRequest("invalid_field", "timeout", "milliseconds, from 1 to "+strconv.FormatInt(jobs.MaxCaptureWait.Milliseconds(), 10))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// answerBrowserless writes the capture's bytes as Browserless does; a
// capture not done in time is a 408 naming its job.
func (s *Server) answerBrowserless(c *gin.Context, j *jobs.Job, route, format string) error {
	if !j.Terminal() {
		return &apiError{Status: http.StatusRequestTimeout, Code: "capture_timeout",
			Message: "the capture was not done within the request's timeout; it goes on: poll /v1/jobs/" + j.ID,
			Header:  http.Header{"Location": {"/v1/jobs/" + j.ID}, "X-Snapq-Job-Id": {j.ID}}}
	}
	want := browserlessTypes[route]
	if route == browserless.RouteScreenshot {
		want = browserlessTypes[format]
	}
	return s.answerCapture(c, j, want, 1)
}
