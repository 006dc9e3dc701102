package session

import (
	"fmt"
	"unicode/utf8"
)

// Command is one call of a verb.
type Command struct {
	ID      string   `json:"id"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// Reply is a command's answer: {ok, reply, truncated, url, title, artifacts?, error?}.
type Reply struct {
	OK        bool       `json:"ok"`
	Reply     string     `json:"reply"`
	Truncated bool       `json:"truncated"`
	URL       string     `json:"url"`
	Title     string     `json:"title"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
	Error     *ErrorInfo `json:"error,omitempty"`
	Seq       int        `json:"seq"` // the command's number in the session, from 1
	MS        int64      `json:"ms"`  // time on the worker
}

// ErrorInfo is a failed command's stable code and message.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Artifact is a file a command stored (a screenshot segment, a PDF).
type Artifact struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"` // screenshot | pdf
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	Key         string `json:"-"`             // the object's key in the bucket
	URL         string `json:"url,omitempty"` // filled by the api
}

// DefaultReplyBytes is the reply cap's default (SNAPQ_SESSION_REPLY_BYTES).
const DefaultReplyBytes = 64 << 10

// TruncationMarker starts the line a capped reply ends with.
const TruncationMarker = "[truncated:"

// capReply cuts s to at most limit bytes (on a rune boundary), ending it with the marker
// line, which says how long the whole reply was.
func capReply(s string, limit int) (string, bool) {
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	marker := fmt.Sprintf("\n… %s the reply was %d bytes; the first %d are shown]", TruncationMarker, len(s), limit)
	keep := max(0, limit-len(marker))
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + marker, true
}

// excerpt is s cut to n bytes for the feed.
func excerpt(s string, n int) string {
	out, _ := capReply(s, n)
	return out
}
