// Package webhook announces finished batches and runs to their webhooks:
// events signed with Standard Webhooks headers (Sign, Verify), delivered by
// a worker through the egress guard with retries and a recorded outcome per
// attempt (Handler), enqueued at once by the worker that made the batch final
// (Announcer) and otherwise by the api's reconciler (ReconcileStep), an
// outbox: the delivery row is written in the same transaction that completes
// the batch.
//
// It builds on jobs (the batch and its webhook target) and egress; events
// other than batch.completed get their data from an EventData the worker
// wires in (regression's run.completed).
package webhook
