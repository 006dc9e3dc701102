// Package client is the Go client of snapq's public REST API (/v1): batches,
// jobs, artifacts, visual-regression suites, runs and baselines, and the
// calling key.
//
// It exists so that the people who use snapq from Go, the `snapq` CLI, the
// demo and the end-to-end tests share one client instead of each hand-rolling
// HTTP calls. It depends on the standard library only: the wire types here
// mirror the server's JSON (a test holds them to the server's own types), so
// importing it does not pull in the server's browser, queue or database code.
//
// Every call takes a context. A 429 answer is waited out per its Retry-After
// header (bounded by Options.MaxRetries and MaxRetryWait, and by the context);
// any other error answer comes back as an *Error carrying the API's error
// code and field errors:
//
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Field != "" { … }
//
// Lists come as iterators over the API's cursor pages (Go 1.23 iter.Seq2).
// WaitBatch and WaitRun follow the live event stream (Server-Sent Events,
// resumed with Last-Event-ID after a dropped connection) and fall back to
// polling where the server has no stream.
package client
