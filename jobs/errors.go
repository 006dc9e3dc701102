package jobs

import (
	"errors"
	"strconv"
	"strings"
)

// FieldError is one problem with one field of a request.
type FieldError struct {
	Code    string `json:"code"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// FieldErrors collects the problems of one request. It is the one validator
// idiom of the code base: a validator takes the caller's collector as its
// last parameter, errs *FieldErrors, and records each problem with errs.Add;
// it never returns field errors nor builds FieldError values itself. The
// caller declares one `var errs FieldErrors`, passes &errs to every check,
// and rejects the request when len(errs) > 0 with ValidationErrors(errs) (or
// &ValidationError{Fields: errs}). A caller that needs to know whether one
// check added problems compares len(errs) before and after. A one-field
// rejection is the same three lines. `go test ./internal/house` checks that
// no production function returns field errors and that no code outside this
// file builds them.
type FieldErrors []FieldError

// Add records one problem.
func (e *FieldErrors) Add(code, field, message string) {
	*e = append(*e, FieldError{Code: code, Field: field, Message: message})
}

// ValidationError rejects a request whole, listing every bad field.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, 0, len(e.Fields))
	for _, f := range e.Fields {
		parts = append(parts, f.Field+": "+f.Message)
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// JobError is a job failure with a stable code, as stored and reported.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Job failure codes beyond capture's (see capture.Code*).
const (
	CodeUploadFailed = "upload_failed"
	CodeInternal     = "internal"
	CodeCanceled     = "canceled"
	CodeWorkerLost   = "worker_lost"
	// CodeArtifactNameConflict: the capture gave two artifacts one name (a bug:
	// names are meant to be unique per job); not retried.
	CodeArtifactNameConflict = "artifact_name_conflict"
	// CodeStorageFull: object storage refused an upload because its disk is
	// full (MinIO's XMinioStorageFull, HTTP 507). Retried like an outage; the
	// job fails with it when its retries run out.
	CodeStorageFull = "storage_full"
	// CodeAuthFailed: the job's auth profile could not log in (its recipe
	// failed, it has no login yet, or the page was still logged out after a
	// new login); not retried.
	CodeAuthFailed = "auth_failed"
)

// ErrUnavailable marks a failure to reach the system of record (Postgres
// refused or reset the connection, shut down, or did not answer in time).
// It says nothing about the job: the queue retries the task later without
// counting an attempt, so an outage does not use up a job's retries.
var ErrUnavailable = errors.New("the job store is unavailable")

func itoa(n int) string { return strconv.Itoa(n) }

func joinQuoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
