// Package mcp is snapq's Model Context Protocol server: the tools an agent's
// model calls (fetch, screenshot, pdf, capture_batch, batch_status), built on
// the official Go SDK and served two ways — streamable HTTP at /mcp on the api
// (http.go) and stdio for desktop agents (`snapq mcp`, stdio.go).
//
// Both are clients of snapq's own REST API through the Go client (package
// client): a tool call is a POST /v1/capture (a one-job batch on the
// interactive lane), a batch, or reads of them, made with the caller's API key.
// So every call passes the same authentication, rate limit, in-flight cap,
// egress guard and validation as any other door, and there is no second
// capture pipeline. On the api the client's requests are served in-process by
// the api's own router.
//
// Replies are bounded (reply.go): text is cut at a cap with an explicit
// marker, images are few and small enough, everything else is a link. Errors
// are tool results flagged as errors, carrying snapq's error code and a hint
// the model can act on.
//
// Each tool lives in its own file and registers itself (register, server.go),
// so a new tool — the sessions' browser and browser_help — is one new file.
package mcp
