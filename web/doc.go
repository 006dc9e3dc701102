// Package web is snapq's HTTP edge: the gin router, JSON handlers for the
// public /v1 API, health endpoints, and the one place where domain errors
// become HTTP statuses (errors.go). It talks to the domain through jobs.
package web
