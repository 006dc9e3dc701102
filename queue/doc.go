// Package queue is snapq's adapter to asynq on Redis: the one table of how
// every task kind is queued, timed and retried (tasks.go), the typed
// registration of handlers, the backoff, and AsynqQueue, which implements the
// enqueue interfaces the domain packages declare. The domain packages (jobs,
// regression, webhook) know task kinds and payloads, never asynq.
package queue
