package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Error is an error answer of the API: its HTTP status and the body's
// {"error": {"code", "message", "field", "fields"}}. Match it with errors.As.
type Error struct {
	// StatusCode is the HTTP status (400, 401, 404, 409, 413, 422, 429, 5xx).
	StatusCode int
	// Code is the API's stable error code ("invalid_url", "not_found", …);
	// "http_<status>" when the answer had no JSON error body.
	Code    string
	Message string
	// Field names the first bad field of a request ("targets[3].url"), if any.
	Field string
	// Fields lists every bad field of a rejected request.
	Fields []FieldError
	// RetryAfter is the answer's Retry-After (429, 503), zero when absent.
	RetryAfter time.Duration
}

// FieldError is one problem with one field of a request.
type FieldError struct {
	Code    string `json:"code"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "snapq: %d %s", e.StatusCode, e.Code)
	if e.Field != "" {
		fmt.Fprintf(&b, " (%s)", e.Field)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// IsNotFound reports whether err is the API's 404: an unknown id, another
// key's resource, or an endpoint the server does not have.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error *struct {
		Code    string       `json:"code"`
		Message string       `json:"message"`
		Field   string       `json:"field"`
		Fields  []FieldError `json:"fields"`
	} `json:"error"`
}

// readError turns an error answer into an *Error. It reads (a bounded part
// of) the body but does not close it.
func readError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{StatusCode: resp.StatusCode, Code: fmt.Sprintf("http_%d", resp.StatusCode)}
	if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		e.RetryAfter = d
	}
	var body errorBody
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e.Code, e.Message, e.Field, e.Fields = body.Error.Code, body.Error.Message, body.Error.Field, body.Error.Fields
		return e
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Message = msg
	return e
}
