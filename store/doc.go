// Package store is the Postgres implementation of jobs.Repository: batches,
// jobs and artifacts through pgx, and the embedded migrations from
// migrations/ applied under an advisory lock so replicas can start together.
package store
