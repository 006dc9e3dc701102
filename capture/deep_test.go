package capture

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// streamPosts, streamWindow: the fixture's post stream has 200 posts of 120 px, of which
// only 20 around the scroll position are rendered; the others are height-only placeholders.
const (
	streamPosts  = 200
	streamWindow = 20
)

// streamPage imitates a Discourse-style virtualised post stream. With shell, the document
// never scrolls: the stream is in a 100vh app-shell scroller.
func streamPage(shell bool) string {
	scroller, box := "window", `<div id="stream"></div>`
	if shell {
		scroller = `document.getElementById("shell")`
		box = `<div id="shell" style="height:100vh; overflow:auto"><div id="stream"></div></div>`
	}
	return `<!doctype html><html><head><title>Topic</title><style>
body { margin: 0; font: 16px sans-serif; } .post, .placeholder { height: 120px; box-sizing: border-box; }
` + "</style></head><body" + map[bool]string{true: ` style="overflow:hidden; height:100vh"`, false: ""}[shell] + `>
<h1>A long topic</h1>` + box + `<script>
const N = ` + fmt.Sprint(streamPosts) + `, W = ` + fmt.Sprint(streamWindow) + `, H = 120;
const stream = document.getElementById("stream"), sc = ` + scroller + `;
const pos = () => sc === window ? scrollY - stream.offsetTop : sc.scrollTop - stream.offsetTop;
let shown = -1;
function render() {
	const first = Math.max(0, Math.min(N - W, Math.floor(pos() / H) - 5));
	if (first === shown) return;
	shown = first;
	const parts = [];
	for (let i = 0; i < N; i++) {
		const n = String(i + 1).padStart(3, "0");
		parts.push(i >= first && i < first + W
			? '<div class="post" data-post-id="' + (i + 1) + '"><p>Post ' + n + ' body: stream-marker-' + n + ' and some words to read.</p></div>'
			: '<div class="placeholder"></div>');
	}
	stream.innerHTML = parts.join("");
}
render();
sc.addEventListener("scroll", render);
</script></body></html>`
}

func streamSite(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, streamPage(r.URL.Path == "/shell"))
	})) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv.URL
}

var markerRe = regexp.MustCompile(`stream-marker-(\d{3})`)

// markers returns the post numbers the text names, in order.
func markers(text string) []string {
	var out []string
	for _, m := range markerRe.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

func captureStream(t *testing.T, url string, d DeepCapture) (*Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	res, err := sharedBrowser(t).Capture(ctx, Request{URL: url, Name: "topic", Timeout: 120 * time.Second,
		Viewport: Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1}, Quality: fastQuality,
		Outputs: []string{OutputScreenshot, OutputMarkdown, OutputText}, Prepare: Prepare{DeepCapture: d}})
	if err != nil {
		t.Fatalf("Capture(%s): %v", url, err)
	}
	for _, f := range res.Files {
		if f.Kind == OutputMarkdown {
			return res, string(f.Data)
		}
	}
	t.Fatalf("no markdown output: %+v", res.Files)
	return nil, ""
}

func TestDeepCaptureVirtualisedStream(t *testing.T) {
	site := streamSite(t)
	want := make([]string, streamPosts)
	for i := range want {
		want[i] = fmt.Sprintf("%03d", i+1)
	}
	for name, path := range map[string]string{"document": "/", "app-shell": "/shell"} {
		t.Run(name, func(t *testing.T) {
			// Without the option: what is rendered at the top, posts 1 to 20 (the documented
			// partial result).
			plain, md := captureStream(t, site+path, DeepCapture{})
			if got := markers(md); strings.Join(got, ",") != strings.Join(want[:streamWindow], ",") {
				t.Errorf("plain capture: posts %v, want 001..%03d", got, streamWindow)
			}
			if plain.DeepCapture != nil {
				t.Errorf("plain capture reports a deep capture: %+v", plain.DeepCapture)
			}
			res, md := captureStream(t, site+path, DeepCapture{Enabled: true, MaxMS: 60_000})
			if got := markers(md); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("deep capture: %d posts %v, want 001..200 once each in order", len(got), got)
			}
			r := res.DeepCapture
			if r == nil {
				t.Fatal("no deep capture report")
			}
			if r.Items != streamPosts || r.Stopped != DeepStoppedEnd || r.Bounded || r.Steps < 10 {
				t.Errorf("report %+v, want 200 items, stopped at the end", r)
			}
			t.Logf("deep capture report %+v, timings %v", *r, res.Timings)
			if res.Segments.Total == 0 || len(res.Images) == 0 {
				t.Errorf("no screenshots: %+v", res.Segments)
			}
		})
	}
}

func TestDeepCaptureMaxItems(t *testing.T) {
	res, md := captureStream(t, streamSite(t)+"/", DeepCapture{Enabled: true, MaxItems: 50, MaxMS: 60_000})
	got := markers(md)
	if len(got) != 50 || got[0] != "001" || got[49] != "050" {
		t.Errorf("posts %v, want 001..050", got)
	}
	if r := res.DeepCapture; r == nil || r.Items != 50 || r.Stopped != DeepStoppedMaxItems || !r.Bounded {
		t.Errorf("report %+v, want 50 items, stopped at max_items", r)
	}
}
