// Package notify announces settled visual-regression runs where people look:
// Slack and Discord incoming webhooks, Microsoft Teams workflow webhooks (an
// Adaptive Card), email over SMTP, and signed webhooks. A suite lists its
// channels (regression.Channel), each with a filter (`on`: failed,
// needs_review, error, recovered; `min_ratio`).
//
// When a run settles, Planner decides once which channels hear of it and
// records one notification per channel in Postgres; each is then a durable
// asynq task (Handler) retried with backoff, every attempt recorded on the
// notification, so the run shows what was delivered, what is still pending
// and why one failed. The api's reconciler (ReconcileStep) decides for runs
// whose worker died before deciding and re-enqueues notifications whose task
// went missing.
//
// Every message carries the suite, the run's status and counts, the most
// changed targets with a link to their diff's thumbnail (the api's
// /v1/artifacts/:id/thumbnail) and a link to the run in the dashboard. HTTP
// channels and the SMTP connection go through the egress guard: a channel
// cannot reach an address the workers' policy refuses.
package notify
