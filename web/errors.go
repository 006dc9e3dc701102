package web

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// apiError is an error that knows its HTTP answer: Status, and the body
// {"error": {"code", "message", "field", "fields"?}}. Handlers return it for
// the answers that are the edge's own (401, 404 of a route, 415, 429, …);
// domain errors are mapped to one by toAPIError.
type apiError struct {
	Status  int               `json:"-"`
	Header  http.Header       `json:"-"` // set on the response (Retry-After, WWW-Authenticate)
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Field   string            `json:"field"`
	Fields  []jobs.FieldError `json:"fields,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// errorResponse is the body of every error response.
type errorResponse struct {
	Error *apiError `json:"error"`
}

// errBodyTooLarge is returned when a request body passes the limit.
var errBodyTooLarge = errors.New("request body too large")

// handler is a gin handler or middleware that returns its error instead of
// writing it.
type handler func(c *gin.Context) error

// h adapts fn to gin: a returned error is written by writeError, which also
// aborts the rest of the chain.
func (s *Server) h(fn handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := fn(c); err != nil {
			writeError(c, err)
		}
	}
}

// writeError writes err as the error response and aborts the chain. It is the
// only place that writes error responses.
func writeError(c *gin.Context, err error) {
	e := toAPIError(err)
	if e.Status == http.StatusInternalServerError {
		_ = c.Error(err) // logged by accessLog
	}
	for k, vs := range e.Header {
		for _, v := range vs {
			c.Header(k, v)
		}
	}
	c.AbortWithStatusJSON(e.Status, errorResponse{Error: e})
}

// toAPIError maps an error to its status and body. It is the only place that
// decides statuses for domain errors.
func toAPIError(err error) *apiError {
	var (
		ae *apiError
		ve *jobs.ValidationError
		br budgetRefusal
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &br):
		return budgetError(br)
	case isSessionError(err):
		return sessionAPIError(err) // sessions.go
	case errors.As(err, &ve) && len(ve.Fields) > 0:
		first := ve.Fields[0]
		status := http.StatusBadRequest
		if first.Code == jobs.CodeTooManyTargets {
			status = http.StatusRequestEntityTooLarge
		}
		msg := first.Message
		if len(ve.Fields) > 1 {
			msg = first.Field + ": " + first.Message + " (and " + itoa(len(ve.Fields)-1) + " more problems, see fields)"
		}
		return &apiError{Status: status, Code: first.Code, Message: msg, Field: first.Field, Fields: ve.Fields}
	case errors.Is(err, errBodyTooLarge):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: err.Error()}
	case errors.Is(err, jobs.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: err.Error()}
	case errors.Is(err, jobs.ErrIdempotencyConflict):
		return &apiError{Status: http.StatusConflict, Code: "idempotency_conflict", Message: err.Error(), Field: "Idempotency-Key"}
	case errors.Is(err, jobs.ErrTooManyInFlight):
		return &apiError{Status: http.StatusTooManyRequests, Code: "too_many_jobs_in_flight", Message: err.Error(),
			Header: http.Header{"Retry-After": {"30"}}}
	case errors.Is(err, regression.ErrPairRunNotApprovable):
		return &apiError{Status: http.StatusConflict, Code: "pair_run_not_approvable", Message: regression.ErrPairRunNotApprovable.Error()}
	case errors.Is(err, regression.ErrPreviewTooCostly):
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "preview_too_costly", Message: err.Error()}
	case errors.Is(err, regression.ErrTooManySuites):
		return &apiError{Status: http.StatusConflict, Code: "too_many_suites", Message: err.Error()}
	case errors.Is(err, jobs.ErrConflict):
		return &apiError{Status: http.StatusConflict, Code: "conflict", Message: err.Error()}
	default:
		return &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error; see the api log"}
	}
}

// badRequest is a 400 for one field, in the shape of a validation error.
func badRequest(code, field, msg string) error {
	var errs jobs.FieldErrors
	errs.Add(code, field, msg)
	return &jobs.ValidationError{Fields: errs}
}
