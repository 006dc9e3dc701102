package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// prepareSite serves the pages of the emulation and preparation tests on 127.0.0.1. It counts
// the requests for /pic.png.
func prepareSite(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var picHits atomic.Int32
	green := image.NewRGBA(image.Rect(0, 0, 200, 200))
	for i := range green.Pix {
		green.Pix[i] = []uint8{0, 200, 0, 255}[i%4]
	}
	var pic bytes.Buffer
	if err := png.Encode(&pic, green); err != nil {
		t.Fatal(err)
	}
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!doctype html><html><head><style>html,body{margin:0}</style></head><body>" + body + "</body></html>"))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/pic.png", func(w http.ResponseWriter, r *http.Request) {
		picHits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic.Bytes())
	})
	// /echo puts what the server and the page saw into the title, as JSON.
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		seen, _ := json.Marshal(map[string]string{"ua": r.UserAgent(), "x_test": r.Header.Get("X-Test"),
			"cookie": r.Header.Get("Cookie"), "accept_language": r.Header.Get("Accept-Language")})
		page(`<script>
			const seen = `+string(seen)+`;
			seen.language = navigator.language;
			seen.timezone = Intl.DateTimeFormat().resolvedOptions().timeZone;
			seen.js_ua = navigator.userAgent;
			seen.touch = String(navigator.maxTouchPoints);
			document.title = JSON.stringify(seen);
		</script>`)(w, r)
	})
	mux.HandleFunc("/dark", page(`<style>body{background:#fff} @media (prefers-color-scheme: dark) {body{background:#000}}</style>`))
	mux.HandleFunc("/banner", page(`<style>body{background:rgb(255,0,0)} .banner{position:fixed;inset:0;background:rgb(0,0,255)}</style>
		<div class="banner">Accept cookies</div>`))
	mux.HandleFunc("/spinner", page(`<style>body{background:rgb(255,255,255)} .spinner{position:absolute;top:0;left:0;width:300px;height:300px;background:rgb(0,0,0)}</style>
		<div class="spinner"></div><script>setTimeout(() => document.querySelector(".spinner").remove(), 800)</script>`))
	// /lazy loads its image only when it scrolls into view (IntersectionObserver, no margin).
	mux.HandleFunc("/lazy", page(`<div style="height:3000px"></div><img id="pic" data-src="/pic.png" width="200" height="200" style="display:block">
		<div style="height:1000px"></div><script>
		new IntersectionObserver((es, o) => es.forEach(e => { if (e.isIntersecting) { e.target.src = e.target.dataset.src; o.disconnect(); } }))
			.observe(document.getElementById("pic"));</script>`))
	mux.HandleFunc("/script", page(`<p id="p">before</p>`))
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv, &picHits
}

// seen decodes the /echo page's title.
func seen(t *testing.T, res *Result) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(html.UnescapeString(res.Title)), &m); err != nil {
		t.Fatalf("title %q: %v", res.Title, err)
	}
	return m
}

// logTypes lists the entries of res.Log as "type:ok".
func logTypes(res *Result) []string {
	var s []string
	for _, e := range res.Log {
		s = append(s, fmt.Sprintf("%s:%v", e.Type, e.OK))
	}
	return s
}

// logTypesBut is logTypes without the quality verdict's entries: a test page
// that is nearly one colour (a white page after its spinner left) is rightly
// suspect, which is not what these tests are about.
func logTypesBut(res *Result) []string {
	var s []string
	for _, e := range logTypes(res) {
		if !strings.HasPrefix(e, "quality") {
			s = append(s, e)
		}
	}
	return s
}

func logEntry(t *testing.T, res *Result, typ string) LogEntry {
	t.Helper()
	for _, e := range res.Log {
		if e.Type == typ {
			return e
		}
	}
	t.Fatalf("no %s entry in the log %v", typ, logTypes(res))
	return LogEntry{}
}

// TestEmulationDoesNotLeak runs an emulating job and a plain one on the same tab: the first
// sees every setting, the second none of them.
func TestEmulationDoesNotLeak(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	srv, _ := prepareSite(t)
	res := mustCapture(t, b, Request{URL: srv.URL + "/echo", Emulate: Emulate{
		UserAgent: "snapq-test/1.0", Headers: map[string]string{"X-Test": "yes"},
		Cookies: []Cookie{{Name: "sid", Value: "abc", URL: srv.URL + "/"}},
		Locale:  "de-DE", Timezone: "Asia/Tokyo", Touch: true, Mobile: true,
	}})
	got := seen(t, res)
	want := map[string]string{"ua": "snapq-test/1.0", "js_ua": "snapq-test/1.0", "x_test": "yes", "cookie": "sid=abc",
		"language": "de-DE", "timezone": "Asia/Tokyo", "touch": "5"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("first job: %s = %q, want %q", k, got[k], v)
		}
	}
	if !strings.HasPrefix(got["accept_language"], "de-DE") {
		t.Errorf("first job: Accept-Language = %q, want de-DE first", got["accept_language"])
	}
	for _, typ := range []string{"emulate.user_agent", "emulate.headers", "emulate.cookies", "emulate.locale", "emulate.timezone", "emulate.touch"} {
		if e := logEntry(t, res, typ); !e.OK {
			t.Errorf("%s: %+v", typ, e)
		}
	}

	res = mustCapture(t, b, Request{URL: srv.URL + "/echo"})
	got = seen(t, res)
	if strings.Contains(got["ua"], "snapq-test") || strings.Contains(got["js_ua"], "snapq-test") || got["x_test"] != "" ||
		got["cookie"] != "" || got["language"] == "de-DE" || got["timezone"] == "Asia/Tokyo" || got["touch"] != "0" ||
		strings.HasPrefix(got["accept_language"], "de-DE") {
		t.Errorf("second job saw the first job's emulation: %v", got)
	}
	if l := logTypesBut(res); len(l) != 0 {
		t.Errorf("second job logged %v, want nothing", l)
	}
}

func TestColorSchemeDark(t *testing.T) {
	b := sharedBrowser(t)
	srv, _ := prepareSite(t)
	for _, tc := range []struct {
		name   string
		scheme string
		want   color.RGBA
	}{
		{"dark", "dark", color.RGBA{0, 0, 0, 255}},
		{"light", "light", color.RGBA{255, 255, 255, 255}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustCapture(t, b, Request{URL: srv.URL + "/dark", Screenshot: Screenshot{Mode: ModeViewport},
				Emulate: Emulate{ColorScheme: tc.scheme}})
			if m := decode(t, res.Images[0]); !near(m, 10, 10, tc.want, 2) {
				t.Errorf("background = %s, want %v", pixel(m, 10, 10), tc.want)
			}
		})
	}
}

func TestHideSelectors(t *testing.T) {
	b := sharedBrowser(t)
	srv, _ := prepareSite(t)
	res := mustCapture(t, b, Request{URL: srv.URL + "/banner", Screenshot: Screenshot{Mode: ModeViewport},
		Prepare: Prepare{HideSelectors: []string{".banner"}, DisableAnimations: true}})
	if m := decode(t, res.Images[0]); !near(m, 100, 100, color.RGBA{255, 0, 0, 255}, 2) {
		t.Errorf("pixel under the banner = %s, want red", pixel(m, 100, 100))
	}
	if e := logEntry(t, res, "edit.hide"); !e.OK || e.Target != ".banner" {
		t.Errorf("log entry %+v", e)
	}
	logEntry(t, res, "edit.disable_animations")
}

func TestHiddenSelectorWait(t *testing.T) {
	b := sharedBrowser(t)
	srv, _ := prepareSite(t)
	res := mustCapture(t, b, Request{URL: srv.URL + "/spinner", Screenshot: Screenshot{Mode: ModeViewport},
		Wait: Wait{HiddenSelector: ".spinner", Fonts: true, Images: true}})
	if m := decode(t, res.Images[0]); !near(m, 100, 100, color.RGBA{255, 255, 255, 255}, 2) {
		t.Errorf("pixel where the spinner was = %s, want white (captured after it was gone)", pixel(m, 100, 100))
	}
	diff(t, "log", []string{"wait.fonts:true", "wait.images:true", "wait.hidden_selector:true"}, logTypesBut(res))

	t.Run("timeout", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: srv.URL + "/spinner",
			Wait: Wait{HiddenSelector: ".spinner", SelectorTimeout: 200 * time.Millisecond}})
		wantCode(t, err, CodeSelectorTimeout, false)
	})
	t.Run("best attempt", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: srv.URL + "/spinner",
			Wait: Wait{HiddenSelector: ".spinner", SelectorTimeout: 200 * time.Millisecond, BestAttempt: true}})
		if len(res.WaitErrors) != 1 {
			t.Errorf("wait errors = %q, want one", res.WaitErrors)
		}
	})
}

func TestScrollLoadsLazyImages(t *testing.T) {
	b := sharedBrowser(t)
	srv, hits := prepareSite(t)
	res := mustCapture(t, b, Request{URL: srv.URL + "/lazy", Scroll: Scroll{Enabled: true, Delay: 50 * time.Millisecond}})
	if hits.Load() == 0 {
		t.Fatalf("the lazy image was never requested; log %v", logTypes(res))
	}
	// The image's top is at 3000 px: segment 5 (from 2880 px) shows it 120 px down.
	if len(res.Images) < 5 {
		t.Fatalf("%d segments, want at least 5", len(res.Images))
	}
	if m := decode(t, res.Images[4]); !near(m, 100, 220, color.RGBA{0, 200, 0, 255}, 2) {
		t.Errorf("pixel inside the lazy image = %s, want green", pixel(m, 100, 220))
	}
	if e := logEntry(t, res, "scroll"); !e.OK {
		t.Errorf("scroll entry %+v", e)
	}
}

func TestPrepareScript(t *testing.T) {
	b := sharedBrowser(t)
	srv, _ := prepareSite(t)
	res := mustCapture(t, b, Request{URL: srv.URL + "/script", Outputs: []string{OutputText},
		Prepare: Prepare{Script: `document.getElementById("p").textContent = "after"; 42`}})
	if txt := string(fileByKind(t, res, OutputText).Data); !strings.Contains(txt, "after") {
		t.Errorf("text = %q, want the script's edit", txt)
	}
	if e := logEntry(t, res, "edit.script"); !e.OK || e.Excerpt != "42" {
		t.Errorf("script entry %+v", e)
	}

	// A failing script is logged, and fails the job only when required.
	res = mustCapture(t, b, Request{URL: srv.URL + "/script", Prepare: Prepare{Script: `throw new Error("boom")`}})
	if e := logEntry(t, res, "edit.script"); e.OK || !strings.Contains(e.Error, "boom") {
		t.Errorf("script entry %+v, want the failure", e)
	}
	_, err := capture(t, b, Request{URL: srv.URL + "/script", Prepare: Prepare{Script: `throw new Error("boom")`, ScriptRequired: true}})
	wantCode(t, err, CodeScriptFailed, false)
}
