package web

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
)

// apiError is the body of every error response:
// {"error": {"code", "message", "field", "fields"?}}.
type apiError struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Field   string            `json:"field"`
	Fields  []jobs.FieldError `json:"fields,omitempty"`
}

// errBodyTooLarge is returned when a request body passes the limit.
var errBodyTooLarge = errors.New("request body too large")

// writeError maps an error to its HTTP status and JSON body. It is the only
// place that decides statuses for domain errors.
func writeError(c *gin.Context, err error) {
	var ve *jobs.ValidationError
	switch {
	case errors.As(err, &ve):
		first := ve.Fields[0]
		status := http.StatusBadRequest
		if first.Code == jobs.CodeTooManyTargets {
			status = http.StatusRequestEntityTooLarge
		}
		msg := first.Message
		if len(ve.Fields) > 1 {
			msg = first.Field + ": " + first.Message + " (and " + itoa(len(ve.Fields)-1) + " more problems, see fields)"
		}
		c.AbortWithStatusJSON(status, gin.H{"error": apiError{
			Code: first.Code, Message: msg, Field: first.Field, Fields: ve.Fields}})
	case errors.Is(err, errBodyTooLarge):
		c.AbortWithStatusJSON(http.StatusRequestEntityTooLarge, gin.H{"error": apiError{
			Code: "body_too_large", Message: err.Error(), Field: ""}})
	case errors.Is(err, jobs.ErrNotFound):
		c.AbortWithStatusJSON(http.StatusNotFound, gin.H{"error": apiError{
			Code: "not_found", Message: err.Error()}})
	case errors.Is(err, jobs.ErrIdempotencyConflict):
		c.AbortWithStatusJSON(http.StatusConflict, gin.H{"error": apiError{
			Code: "idempotency_conflict", Message: err.Error(), Field: "Idempotency-Key"}})
	case errors.Is(err, jobs.ErrTooManyInFlight):
		c.Header("Retry-After", "30")
		c.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{"error": apiError{
			Code: "too_many_jobs_in_flight", Message: err.Error()}})
	case errors.Is(err, jobs.ErrConflict):
		c.AbortWithStatusJSON(http.StatusConflict, gin.H{"error": apiError{
			Code: "conflict", Message: err.Error()}})
	default:
		_ = c.Error(err)
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": apiError{
			Code: "internal", Message: "internal error; see the api log"}})
	}
}

func badRequest(c *gin.Context, code, field, msg string) {
	writeError(c, &jobs.ValidationError{Fields: []jobs.FieldError{{Code: code, Field: field, Message: msg}}})
}
