package web

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/mcp"
)

// /mcp: the MCP server over streamable HTTP (package mcp). The key is checked
// and the request rate-limited like /v1; opening a session takes a slot of
// the key's session cap (jobs.WorkMCPSession) until the session ends; bodies
// are capped at MaxBodyBytes. Tool calls are requests to this router, made in
// process with the caller's key, so each passes /v1's checks again.

// MCPPath is where the MCP server is served.
const MCPPath = "/mcp"

// mcpWriteWindow is how long an answer on /mcp may take to write: a tool call
// waits up to mcp.MaxWait for its capture, past the server's WriteTimeout.
const mcpWriteWindow = mcp.MaxWait + time.Minute

// routeMCP mounts /mcp on r, served by a handler whose tool calls r answers.
func (s *Server) routeMCP(r *gin.Engine) {
	h, err := mcp.NewHandler(mcp.HTTPConfig{API: r, MaxBodyBytes: s.maxBody(), Logger: s.logger()})
	if err != nil { // only without a router, which cannot be
		s.logger().Error("the MCP door is not served", "err", err)
		return
	}
	serve := s.h(func(c *gin.Context) error {
		_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(mcpWriteWindow))
		admit := func() (func(), error) {
			// The session outlives this request: its slot is held until it ends.
			c := c.Copy()
			c.Request = c.Request.WithContext(context.WithoutCancel(c.Request.Context()))
			return s.acquire(c, jobs.WorkMCPSession)
		}
		return h.Serve(c.Writer, c.Request, owner(c), admit)
	})
	auth := []gin.HandlerFunc{s.h(s.limitAuthFailures(s.authenticate)), s.h(s.rateLimit), serve}
	r.GET(MCPPath, auth...)
	r.POST(MCPPath, auth...)
	r.DELETE(MCPPath, auth...)
}
