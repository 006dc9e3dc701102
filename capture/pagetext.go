package capture

import (
	"fmt"
	"unicode/utf8"
)

// Caps on text the page controls. A page can throw an error, set a title or return a value
// of any size; what crosses into the worker's messages, logs and the job's row is cut where
// it enters Go (docs/api/jobs.md: "Caps on page-controlled text").
const (
	// MaxMessageBytes caps an *Error's Message, the text of a JavaScript exception and
	// Result.Title, in bytes, the marker included.
	MaxMessageBytes = 1 << 10
	// TruncatedMarker ends a text cut to MaxMessageBytes.
	TruncatedMarker = "…(truncated)"
)

// capText cuts s to at most limit bytes on a UTF-8 boundary, ending it with TruncatedMarker
// when it was cut.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(limit-len(TruncatedMarker), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + TruncatedMarker
}

// CapMessage cuts a failure message to MaxMessageBytes on a UTF-8 boundary, ending it with
// TruncatedMarker when it was cut. Callers that build messages from other errors use it so
// a job's stored error stays within the cap.
func CapMessage(s string) string { return capText(s, MaxMessageBytes) }

// exceptionError is a JavaScript exception thrown by the page, its text capped.
func exceptionError(text string) error {
	return fmt.Errorf("javascript exception: %s", CapMessage(text))
}
