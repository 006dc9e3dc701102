package capture

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// A failed job's error carries what it found: the log of the steps before the failure, the
// failed step last (OK false, with its error), the document's status and URL.
func TestFailedJobKeepsLog(t *testing.T) {
	b := sharedBrowser(t)
	srv := actionsSite(t)
	tests := []struct {
		name     string
		req      Request
		wantCode string
		wantLog  []string // index:type:ok
		wantErr  string   // in the last entry's error
	}{
		{name: "wait selector never appears",
			req: Request{Emulate: Emulate{UserAgent: "snapq-test"},
				Wait: Wait{Selector: "#never", SelectorTimeout: 300 * time.Millisecond}},
			wantCode: CodeSelectorTimeout, wantLog: []string{"0:emulate.user_agent:true", "1:wait:false"}, wantErr: `"#never"`},
		{name: "action selector never appears",
			req: Request{Actions: []Action{
				{Type: ActionEvaluate, Expression: "1 + 1"},
				{Type: ActionWaitForSelector, Selector: "#never", Timeout: 300 * time.Millisecond},
				{Type: ActionEvaluate, Expression: "2"},
			}},
			wantCode: CodeActionFailed, wantLog: []string{"0:evaluate:true", "1:wait_for_selector:false"}, wantErr: `"#never"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.URL, req.Name, req.Screenshot = srv.URL+"/widgets", "w", Screenshot{Mode: ModeViewport}
			_, err := capture(t, b, req)
			ce := wantCode(t, err, tt.wantCode, false)
			if ce == nil || ce.Result == nil {
				t.Fatalf("err %v carries no result", err)
			}
			r := ce.Result
			diff(t, "log", tt.wantLog, actionLogTypes(r.Log))
			if last := r.Log[len(r.Log)-1]; !strings.Contains(last.Error, tt.wantErr) {
				t.Errorf("last log entry's error %q, want it to name %s", last.Error, tt.wantErr)
			}
			if r.HTTPStatus != 200 || r.FinalURL != req.URL || r.Timings["navigate"] == 0 && len(r.Timings) == 0 {
				t.Errorf("result: status %d final URL %q timings %v; want 200, %q and the navigation's time",
					r.HTTPStatus, r.FinalURL, r.Timings, req.URL)
			}
			if len(r.Images) != 0 || len(r.Files) != 0 {
				t.Errorf("failed result has %d images and %d files, want none", len(r.Images), len(r.Files))
			}
		})
	}
}

// Text the page controls is capped where it enters: a 1 MB exception, a 10 MB evaluate value
// and a 1 MB title leave an error message, log and result within MaxMessageBytes,
// MaxLogExcerpt and MaxEvaluationBytes.
func TestPageTextCapped(t *testing.T) {
	b := sharedBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><body><p>hi</p>
<script>document.title = "é".repeat(1 << 20);</script></body></html>`)
	}))
	t.Cleanup(srv.Close)
	const throwBig = `throw new Error("ü".repeat(1 << 19))` // 1 MiB of UTF-8
	checkMessage := func(t *testing.T, what, s string) {
		t.Helper()
		if len(s) > MaxMessageBytes || !utf8.ValidString(s) || !strings.HasSuffix(s, TruncatedMarker) {
			t.Errorf("%s: %d bytes, valid UTF-8 %v, ends %q; want at most %d ending in %q",
				what, len(s), utf8.ValidString(s), s[max(len(s)-20, 0):], MaxMessageBytes, TruncatedMarker)
		}
	}
	checkResult := func(t *testing.T, r *Result) {
		t.Helper()
		for _, e := range r.Log {
			for _, s := range []string{e.Target, e.Error, e.Excerpt} {
				if utf8.RuneCountInString(s) > MaxLogExcerpt {
					t.Errorf("log entry %s has %d characters, want at most %d", e.Type, utf8.RuneCountInString(s), MaxLogExcerpt)
				}
			}
		}
		for _, ev := range r.Evaluations {
			if len(ev.Value) > MaxEvaluationBytes {
				t.Errorf("evaluation %d is %d bytes, want at most %d", ev.Index, len(ev.Value), MaxEvaluationBytes)
			}
		}
	}

	t.Run("evaluate action", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: srv.URL, Name: "p", Screenshot: Screenshot{Mode: ModeViewport},
			Actions: []Action{
				{Type: ActionEvaluate, Expression: `"x".repeat(10 << 20)`},
				{Type: ActionEvaluate, Expression: throwBig},
			}})
		ce := wantCode(t, err, CodeActionFailed, false)
		if ce == nil || ce.Result == nil {
			t.Fatalf("err %v carries no result", err)
		}
		checkMessage(t, "message", ce.Message)
		if n := len(ce.Error()); n > 3*MaxMessageBytes {
			t.Errorf("Error() is %d bytes, want the capped texts only", n)
		}
		checkResult(t, ce.Result)
		if len(ce.Result.Evaluations) != 1 || !ce.Result.Evaluations[0].Truncated {
			t.Errorf("evaluations %d, want the 10 MB value kept truncated", len(ce.Result.Evaluations))
		}
	})
	t.Run("prepare script", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: srv.URL, Name: "p", Screenshot: Screenshot{Mode: ModeViewport},
			Prepare: Prepare{Script: throwBig, ScriptRequired: true}})
		ce := wantCode(t, err, CodeScriptFailed, false)
		if ce == nil {
			return
		}
		checkMessage(t, "message", ce.Message)
		if n := len(ce.Error()); n > 3*MaxMessageBytes {
			t.Errorf("Error() is %d bytes, want the capped texts only", n)
		}
		if ce.Result != nil {
			checkResult(t, ce.Result)
		}
	})
	t.Run("title", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: srv.URL, Name: "p", Screenshot: Screenshot{Mode: ModeViewport}})
		checkMessage(t, "title", res.Title)
	})
}

// A request that keeps its checkpoints (a suite journey) fails with the images its
// screenshot actions took before the failed one; any other request fails with none.
func TestFailedJobKeepsCheckpoints(t *testing.T) {
	b := sharedBrowser(t)
	srv := actionsSite(t)
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			req := Request{URL: srv.URL + "/widgets", Name: "w", Screenshot: Screenshot{Mode: ModeViewport}, KeepCheckpoints: keep,
				Actions: []Action{
					{Type: ActionScreenshot, Name: "first", Screenshot: Screenshot{Mode: ModeViewport, Format: FormatPNG}},
					{Type: ActionWaitForSelector, Selector: "#never", Timeout: 300 * time.Millisecond},
					{Type: ActionScreenshot, Name: "second", Screenshot: Screenshot{Mode: ModeViewport, Format: FormatPNG}},
				}}
			_, err := capture(t, b, req)
			ce := wantCode(t, err, CodeActionFailed, false)
			if ce == nil || ce.Result == nil {
				t.Fatalf("err %v carries no result", err)
			}
			var names []string
			for _, img := range ce.Result.Images {
				names = append(names, img.Name)
			}
			want := []string{"w-first.png"}
			if !keep {
				want = nil
			}
			diff(t, "kept images", want, names)
		})
	}
}
