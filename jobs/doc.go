// Package jobs is snapq's domain core: batches, jobs and artifacts, the
// capture options users send and how they are validated, the asynq task that
// carries a job to a worker, and the handler that turns one job into
// artifacts. It declares the interfaces it consumes (Repository, Renderer,
// ArtifactStore) and imports no HTTP, SQL or S3 library; store/, web/,
// capture/ and artifacts/ are the adapters at the edge.
package jobs
