package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// actionsSite serves a search form whose results page is 1800 CSS px tall, and a widgets
// page with a <select> and a hover target (127.0.0.1 only).
func actionsSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><body style="margin:0">
<form action="/results" method="get"><input id="q" name="q"><button id="go" type="submit">Go</button></form>
<p id="late" style="display:none">late</p>
<script>setTimeout(() => document.getElementById("late").style.display = "block", 300)</script>
</body></html>`)
	})
	mux.HandleFunc("/results", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><html><head><title>results</title></head><body style="margin:0">
<h1 id="r" style="height:1800px;margin:0">results for %s</h1></body></html>`, strings.ReplaceAll(r.URL.Query().Get("q"), "<", ""))
	})
	mux.HandleFunc("/widgets", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><body>
<select id="s"><option value="a">A</option><option value="b">B</option></select>
<div id="h" style="width:200px;height:100px;background:#ccc">hover me</div>
<script>
document.getElementById("s").addEventListener("change", e => document.body.dataset.selected = e.target.value);
document.getElementById("h").addEventListener("mouseover", () => document.body.dataset.hovered = "yes");
</script></body></html>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func actionLogTypes(log []LogEntry) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = fmt.Sprintf("%d:%s:%v", e.Index, e.Type, e.OK)
	}
	return out
}

func TestActionsFormNamedScreenshot(t *testing.T) {
	b := sharedBrowser(t)
	srv := actionsSite(t)
	res := mustCapture(t, b, Request{
		URL: srv.URL + "/form", Name: "job",
		Viewport:   Viewport{Width: 400, Height: 300},
		Screenshot: Screenshot{Mode: ModeFull},
		Actions: []Action{
			{Type: ActionType, Selector: "#q", Text: "kittens", KeyDelay: 5 * time.Millisecond},
			{Type: ActionClick, Selector: "#go"},
			{Type: ActionWaitForNavigation},
			{Type: ActionWaitForSelector, Selector: "#r"},
			{Type: ActionScreenshot, Name: "results"},
			{Type: ActionEvaluate, Expression: `({text: document.getElementById("r").textContent, n: 2})`},
		},
	})
	diff(t, "log", []string{"0:type:true", "1:click:true", "2:wait_for_navigation:true",
		"3:wait_for_selector:true", "4:screenshot:true", "5:evaluate:true"}, actionLogTypes(res.Log))
	if !strings.Contains(res.FinalURL, "/results?q=kittens") {
		t.Errorf("final URL %q, want the results page", res.FinalURL)
	}
	want := map[string][2]int{"job-results.png": {400, 300}, "job.png": {400, 1800}}
	if len(res.Images) != len(want) {
		t.Fatalf("got %d images, want %d", len(res.Images), len(want))
	}
	for _, img := range res.Images {
		size, ok := want[img.Name]
		if !ok {
			t.Errorf("unexpected image %q", img.Name)
			continue
		}
		m := decode(t, img)
		if got := [2]int{m.Bounds().Dx(), m.Bounds().Dy()}; got != size {
			t.Errorf("%s is %v, want %v", img.Name, got, size)
		}
	}
	if len(res.Evaluations) != 1 || res.Evaluations[0].Index != 5 {
		t.Fatalf("evaluations %+v, want one at index 5", res.Evaluations)
	}
	var v struct {
		Text string `json:"text"`
		N    int    `json:"n"`
	}
	if err := json.Unmarshal(res.Evaluations[0].Value, &v); err != nil || v.Text != "results for kittens" || v.N != 2 {
		t.Errorf("evaluation %s (%v), want text 'results for kittens', n 2", res.Evaluations[0].Value, err)
	}
	if ex := res.Log[5].Excerpt; ex != string(res.Evaluations[0].Value) {
		t.Errorf("log excerpt %q, want the value %s", ex, res.Evaluations[0].Value)
	}
	if ex := res.Log[4].Excerpt; ex != "job-results.png" {
		t.Errorf("screenshot excerpt %q", ex)
	}
}

func TestActionsPressEnterSegments(t *testing.T) {
	b := sharedBrowser(t)
	srv := actionsSite(t)
	res := mustCapture(t, b, Request{
		URL: srv.URL + "/form", Name: "job", Viewport: Viewport{Width: 400, Height: 600},
		Screenshot: Screenshot{Mode: ModeViewport},
		Actions: []Action{
			{Type: ActionType, Selector: "#q", Text: "dogs"},
			{Type: ActionPress, Key: "Enter"},
			{Type: ActionWaitForNavigation, Timeout: 3 * time.Second},
			{Type: ActionScreenshot, Name: "all", Screenshot: Screenshot{Mode: ModeSegments, MaxSegments: 2}},
		},
	})
	var names []string
	for _, img := range res.Images {
		names = append(names, img.Name)
	}
	diff(t, "images", []string{"job-all-001.png", "job-all-002.png", "job.png"}, names)
	if !strings.Contains(res.FinalURL, "q=dogs") {
		t.Errorf("final URL %q", res.FinalURL)
	}
}

func TestEvaluateLargeStringTruncated(t *testing.T) {
	b := sharedBrowser(t)
	srv := actionsSite(t)
	res := mustCapture(t, b, Request{
		URL: srv.URL + "/widgets", Name: "w", Screenshot: Screenshot{Mode: ModeViewport},
		Actions: []Action{{Type: ActionEvaluate, Expression: `"x".repeat(200000)`}},
	})
	if len(res.Evaluations) != 1 {
		t.Fatalf("evaluations: %d", len(res.Evaluations))
	}
	ev := res.Evaluations[0]
	if len(ev.Value) > MaxEvaluationBytes || !ev.Truncated {
		t.Errorf("value is %d bytes (truncated %v), want at most %d and truncated", len(ev.Value), ev.Truncated, MaxEvaluationBytes)
	}
	var s string
	if err := json.Unmarshal(ev.Value, &s); err != nil {
		t.Fatalf("value is not a JSON string: %v", err)
	}
	kept := strings.Count(s, "x")
	if want := fmt.Sprintf("…[truncated %d bytes]", 200000-kept); !strings.HasSuffix(s, want) {
		t.Errorf("value ends %q, want %q", s[len(s)-40:], want)
	}
	if ex := res.Log[0].Excerpt; len([]rune(ex)) != MaxLogExcerpt || !strings.HasSuffix(ex, "…") {
		t.Errorf("log excerpt is %d characters, want %d ending in …", len([]rune(ex)), MaxLogExcerpt)
	}
}

func TestActionsSelectHover(t *testing.T) {
	b := sharedBrowser(t)
	srv := actionsSite(t)
	res := mustCapture(t, b, Request{
		URL: srv.URL + "/widgets", Name: "w", Screenshot: Screenshot{Mode: ModeViewport},
		Actions: []Action{
			{Type: ActionSelect, Selector: "#s", Value: "b"},
			{Type: ActionHover, Selector: "#h"},
			{Type: ActionScroll, To: "bottom"},
			{Type: ActionWait, Duration: 10 * time.Millisecond},
			{Type: ActionEvaluate, Expression: `({selected: document.body.dataset.selected, value: document.getElementById("s").value, hovered: document.body.dataset.hovered})`},
		},
	})
	diff(t, "evaluation", `{"hovered":"yes","selected":"b","value":"b"}`, string(res.Evaluations[0].Value))
}

func TestActionFailures(t *testing.T) {
	b := sharedBrowser(t)
	srv := actionsSite(t)
	t.Run("required", func(t *testing.T) {
		_, err := capture(t, b, Request{
			URL: srv.URL + "/widgets", Name: "w", Screenshot: Screenshot{Mode: ModeViewport},
			Actions: []Action{
				{Type: ActionWait, Duration: time.Millisecond},
				{Type: ActionClick, Selector: "#missing", Timeout: 300 * time.Millisecond},
				{Type: ActionEvaluate, Expression: "1"},
			},
		})
		var ce *Error
		if !errors.As(err, &ce) || ce.Code != CodeActionFailed || ce.Retryable {
			t.Fatalf("err %v, want non-retryable %s", err, CodeActionFailed)
		}
		if !strings.Contains(ce.Message, "action 1 (click)") || !strings.Contains(ce.Message, "#missing") {
			t.Errorf("message %q, want the index, type and selector", ce.Message)
		}
	})
	t.Run("optional", func(t *testing.T) {
		res := mustCapture(t, b, Request{
			URL: srv.URL + "/widgets", Name: "w", Screenshot: Screenshot{Mode: ModeViewport},
			Actions: []Action{
				{Type: ActionClick, Selector: "#missing", Timeout: 300 * time.Millisecond, Optional: true},
				{Type: ActionEvaluate, Expression: `throw new Error("boom")`, Optional: true},
				{Type: ActionEvaluate, Expression: "1 + 1"},
			},
		})
		diff(t, "log", []string{"0:click:false", "1:evaluate:false", "2:evaluate:true"}, actionLogTypes(res.Log))
		if e := res.Log[0].Error; !strings.Contains(e, "#missing") {
			t.Errorf("log error %q, want the selector", e)
		}
		if e := res.Log[1].Error; !strings.Contains(e, "boom") {
			t.Errorf("log error %q, want the exception", e)
		}
		if len(res.Images) != 1 {
			t.Errorf("%d images, want the final screenshot", len(res.Images))
		}
	})
	t.Run("budget", func(t *testing.T) {
		_, err := capture(t, b, Request{
			URL: srv.URL + "/widgets", Name: "w", Screenshot: Screenshot{Mode: ModeViewport},
			ActionsTimeout: 300 * time.Millisecond,
			Actions:        []Action{{Type: ActionWait, Duration: 5 * time.Second}},
		})
		var ce *Error
		if !errors.As(err, &ce) || ce.Code != CodeActionFailed || !strings.Contains(ce.Message, "budget") {
			t.Fatalf("err %v, want %s naming the budget", err, CodeActionFailed)
		}
	})
}

func TestActionLogCaps(t *testing.T) {
	t.Parallel()
	var res Result
	l := actionLog{&res}
	for i := range MaxLogEntries + 5 {
		l.add(LogEntry{Index: i, Type: "click", OK: true})
	}
	if len(res.Log) != MaxLogEntries || !res.LogTruncated || res.Log[0].Index != 5 {
		t.Errorf("log has %d entries (truncated %v, first %d), want %d, true, 5",
			len(res.Log), res.LogTruncated, res.Log[0].Index, MaxLogEntries)
	}
	l.add(LogEntry{Type: "evaluate", Excerpt: strings.Repeat("é", 1000), Target: "short"})
	last := res.Log[len(res.Log)-1]
	if n := len([]rune(last.Excerpt)); n != MaxLogExcerpt || !strings.HasSuffix(last.Excerpt, "…") || last.Target != "short" {
		t.Errorf("excerpt %d characters, target %q; want %d ending in …", n, last.Target, MaxLogExcerpt)
	}
	data, _ := json.Marshal(LogEntry{Index: 1, Type: "click", Target: "#a", OK: true, MS: 3})
	diff(t, "json", `{"index":1,"type":"click","target":"#a","ok":true,"ms":3}`, string(data))
}

func TestEvaluateCapObject(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(map[string]string{"k": strings.Repeat("y", 100)})
	ev := capEvaluation(2, raw, 80)
	var s string
	if err := json.Unmarshal(ev.Value, &s); err != nil || len(ev.Value) > 80 || !ev.Truncated ||
		!strings.HasPrefix(s, `{"k":"yy`) || !strings.Contains(s, "…[truncated ") {
		t.Errorf("capped %s (%v)", ev.Value, err)
	}
	if ev := capEvaluation(0, json.RawMessage(`{"a":1}`), 50); string(ev.Value) != `{"a":1}` || ev.Truncated {
		t.Errorf("small value changed: %+v", ev)
	}
}

func TestActionFuncsCoverEveryType(t *testing.T) {
	t.Parallel()
	types := []string{ActionClick, ActionType, ActionPress, ActionHover, ActionSelect, ActionScroll, ActionWait,
		ActionWaitForSelector, ActionWaitForNavigation, ActionEvaluate, ActionScreenshot}
	for _, typ := range types {
		if actionFuncs[typ] == nil {
			t.Errorf("action type %q has no function in actionFuncs", typ)
		}
	}
	diff(t, "table size", len(types), len(actionFuncs))
	_, err := runAction(&actionEnv{a: Action{Type: "teleport"}})
	diff(t, "unknown type", `unknown action type "teleport"`, fmt.Sprint(err))
}
