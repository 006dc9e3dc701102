// Package web is snapq's HTTP edge: the gin router, JSON handlers for the
// public /v1 API, the dashboard, health and metrics endpoints, and the one
// place where errors become HTTP statuses and error bodies (errors.go).
// Handlers return errors; middleware loads the resource an :id names
// (resource.go); response bodies are the structs in response.go. It talks to
// the domain through jobs, regression and webhook, and reads the store through
// the narrow interfaces the Server holds (BatchReader, regression.Reader,
// WebhookReader, KeyReader).
package web
