// Package cli is the `snapq` command (cmd/snapq): a command tree (cobra) over
// the Go client (client/), so the CLI speaks to the api exactly as any Go
// program does. It reads its settings from flags, then SNAPQ_URL and
// SNAPQ_API_KEY, then an optional config file; prints tables for people and
// JSON (--json) for scripts; shows a live progress bar on a terminal and
// plain progress lines elsewhere.
//
// Exit codes: 0 success; 1 a failure (an API error, a job that failed, a run
// that did not pass); 2 a usage error (a bad flag, argument or option).
package cli
