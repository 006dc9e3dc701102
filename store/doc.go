// Package store is the Postgres implementation of the repository interfaces
// the domain packages declare where they consume them (guards.go): batches,
// jobs and artifacts through pgx, and the embedded migrations from
// migrations/ applied under an advisory lock so replicas can start together.
package store
