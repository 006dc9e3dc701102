package capture

import (
	"time"
	"unicode/utf8"
)

// Log limits. The log travels in the job's result row, so it is bounded.
const (
	// MaxLogEntries is how many entries Result.Log keeps; past it the oldest are dropped and
	// Result.LogTruncated is set.
	MaxLogEntries = 200
	// MaxLogExcerpt is the longest Target, Error and Excerpt of an entry, in characters,
	// the "…" marking a cut included.
	MaxLogExcerpt = 512
)

// LogEntry records one step the capture performed on the page: an emulation setting, a wait,
// a page edit or a scripted action. Entries are in the order the steps ran.
type LogEntry struct {
	// Index is, for an action, its position in Request.Actions; for other steps the 0-based
	// position in Result.Log.
	Index   int    `json:"index"`
	Type    string `json:"type"`   // e.g. "emulate.user_agent", "wait.fonts", "edit.hide", "scroll", "click"
	Target  string `json:"target"` // what the step applied to (a selector, a value), may be empty
	OK      bool   `json:"ok"`
	MS      int64  `json:"ms"`                // duration in milliseconds
	Error   string `json:"error,omitempty"`   // why the step failed, when !OK
	Excerpt string `json:"excerpt,omitempty"` // a short excerpt of the step's output (a script's result), may be empty
}

// logStep appends one entry to res.Log for a step that started at start.
func logStep(res *Result, typ, target string, start time.Time, err error, excerpt string) {
	e := LogEntry{Index: len(res.Log), Type: typ, Target: target, OK: err == nil,
		MS: time.Since(start).Milliseconds(), Excerpt: excerpt}
	if err != nil {
		e.Error = err.Error()
	}
	actionLog{res}.add(e)
}

// actionLog appends to a Result's log within the bounds: at most MaxLogEntries entries (the
// oldest dropped, LogTruncated set), texts cut to MaxLogExcerpt characters.
type actionLog struct{ res *Result }

func (l actionLog) add(e LogEntry) {
	e.Target = excerpt(e.Target, MaxLogExcerpt)
	e.Error = excerpt(e.Error, MaxLogExcerpt)
	e.Excerpt = excerpt(e.Excerpt, MaxLogExcerpt)
	r := l.res
	if len(r.Log) >= MaxLogEntries {
		n := len(r.Log) - MaxLogEntries + 1
		r.Log = append(r.Log[:0], r.Log[n:]...)
		r.LogTruncated = true
	}
	r.Log = append(r.Log, e)
	r.logged++
}

// excerpt cuts s to at most n characters, the last one being "…" when it was cut.
func excerpt(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n-1 {
			return s[:i] + "…"
		}
		count++
	}
	return s
}
