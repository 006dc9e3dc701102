// Package maintenance keeps storage bounded after the work is done: what
// expired is deleted, what nothing names any more is swept, and rows whose
// object went missing are reported.
//
// It follows river's maintenance model: each loop is its own service with
// its own state and report — BranchExpiry from regression (wired in as a
// BaselineExpirer), Retention (retention.go: expired batches and runs, never
// what a baseline names), the Sweeper (sweep.go: objects no row names) and
// the MissingCheck (missing.go) — and one runner, Maintenance, sequences
// them into a pass with one report. A pass runs as a periodic task
// (SweepTask, task.go: one replica per interval, claimed in Postgres) or on
// demand (POST /v1/admin/sweep).
//
// The package lives apart from jobs because none of this is on the path of
// a capture: jobs knows batches and jobs; maintenance decides when their
// rows and objects may go. It declares the store and bucket interfaces it
// consumes; store/ and artifacts/ implement them.
package maintenance
