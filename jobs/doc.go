// Package jobs is snapq's domain core: batches, jobs and artifacts; the
// capture options users send, decoded strictly and validated (decode.go,
// options.go, prepare.go, actions.go); the task kinds and payloads
// (tasks.go); the Service that accepts and cancels batches; the Handler that
// turns one job into artifacts; and the Reconciler that makes sure every
// accepted job reaches a worker. Retention and the orphan sweep are the
// maintenance package's.
//
// Features built on jobs plug in without jobs knowing them: the Handler runs
// AfterFinal hooks when a job is final, the Reconciler runs the
// ReconcileSteps it is handed, and cmd/ wires both (regression's comparisons,
// webhook's deliveries). jobs declares the interfaces it consumes where it
// consumes them (repository.go, handler.go) and imports no HTTP framework,
// SQL, S3 or queue library: store/, web/, artifacts/, queue/ and capture/ are
// the adapters at the edge.
package jobs
