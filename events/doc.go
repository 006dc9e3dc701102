// Package events carries the state changes of batches and runs to the API
// replicas that stream them to clients (GET /v1/batches/:id/events,
// /v1/runs/:id/events).
//
// The store publishes each change once it has committed, as an entry of a
// Redis Stream per batch or run (Publisher); every replica reads those
// streams (Hub), so any replica can serve any client, and a client that
// reconnects names the last entry id it saw to get the rest. Publishing is
// best effort: a lost entry never fails a job, and the stream's final event
// is derived from Postgres, not from the stream, so a client never waits for
// an entry that was lost.
//
// A leaf: it imports go-redis and nothing of snapq.
package events
