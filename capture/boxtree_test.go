package capture

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The box tree records visible elements with stable selectors (data-testid,
// id, role and name, CSS path), their page boxes, texts and styles; hidden
// elements are left out and the walk stops at MaxBoxTreeElements.
func TestBoxTree(t *testing.T) {
	b := sharedBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/many" {
			fmt.Fprintf(w, `<!doctype html><body>%s</body>`, strings.Repeat(`<i style="display:inline-block;width:2px;height:2px"></i>`, 6000))
			return
		}
		_, _ = w.Write([]byte(`<!doctype html><html><head><style>body{margin:0;font:16px sans-serif}</style></head><body>
			<header style="height:40px"><span class="clock">10:41</span></header>
			<h1 id="title" style="margin:0;height:50px">Hello   world</h1>
			<button style="position:absolute;left:100px;top:300px;width:80px;height:30px;background:rgb(255,0,0)">Buy now</button>
			<div data-testid="card" style="position:absolute;left:10px;top:400px;width:200px;height:100px">Card</div>
			<p style="display:none">hidden</p><p style="visibility:hidden">invisible</p>
			</body></html>`))
	}))
	t.Cleanup(srv.Close)
	res := mustCapture(t, b, Request{URL: srv.URL, BoxTree: true, Viewport: Viewport{Width: 800, Height: 600},
		Screenshot: Screenshot{Mode: ModeViewport}})
	if res.BoxTree == nil {
		t.Fatal("no box tree")
	}
	by := map[string]Element{}
	for _, e := range res.BoxTree.Elements {
		by[e.Selector] = e
		if strings.Contains(e.Text, "invisible") && e.Tag == "p" || e.Text == "hidden" {
			t.Errorf("hidden element recorded: %+v", e)
		}
	}
	h1, ok := by["#title"]
	if !ok || h1.Text != "Hello world" || h1.TextHash == "" || h1.Y != 40 || h1.Height != 50 {
		t.Errorf("#title = %+v (all: %v)", h1, keys(by))
	}
	btn, ok := by[`role=button[name="Buy now"]`]
	if !ok || btn.X != 100 || btn.Y != 300 || btn.Width != 80 || btn.Height != 30 || btn.Style.Background != "rgb(255, 0, 0)" || btn.StyleHash == "" {
		t.Errorf("button = %+v (all: %v)", btn, keys(by))
	}
	if c, ok := by[`[data-testid="card"]`]; !ok || c.Text != "Card" || c.Y != 400 {
		t.Errorf("card = %+v", c)
	}
	if c, ok := by["body > header > span.clock"]; !ok || c.Text != "10:41" || c.Parent < 0 || res.BoxTree.Elements[c.Parent].Tag != "header" {
		t.Errorf("clock = %+v (all: %v)", c, keys(by))
	}

	many := mustCapture(t, b, Request{URL: srv.URL + "/many", BoxTree: true, Viewport: Viewport{Width: 800, Height: 600},
		Screenshot: Screenshot{Mode: ModeViewport}})
	if many.BoxTree == nil || len(many.BoxTree.Elements) == 0 || len(many.BoxTree.Elements) > MaxBoxTreeElements || !many.BoxTree.Truncated {
		t.Errorf("6,001 elements: %d recorded, truncated %v", len(many.BoxTree.Elements), many.BoxTree.Truncated)
	}
	for _, e := range many.Log {
		if e.Type == "box_tree" {
			data, _ := json.Marshal(many.BoxTree)
			t.Logf("box tree of 6,001 elements: %d recorded in %d ms, %d bytes of JSON", len(many.BoxTree.Elements), e.MS, len(data))
			if len(data) > MaxBoxTreeBytes*5/4 {
				t.Errorf("the tree is %d bytes, past its cap of about %d", len(data), MaxBoxTreeBytes)
			}
		}
	}
}

func keys(m map[string]Element) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Issue 30, defect 1: stabilisation measures the ignore masks and the box
// tree with the capture it keeps, not once before the first of its retakes,
// so an element that appears while it retakes (a late ad, a modal) is masked
// and explained. The page adds its ad when the first capture fits the page
// (it pins the vh-sized hero), so the ad appears after the first measurement
// on every run, and the retakes show it.
func TestStabilizeRemeasuresLateElements(t *testing.T) {
	b := sharedBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><style>body{margin:0}</style></head><body>
			<div id="hero" style="height:20vh;background:#eee"></div><p style="height:900px">Story</p>
			<script>
			new MutationObserver((ms, obs) => {
				obs.disconnect();
				const ad = document.createElement("div");
				ad.className = "ad";
				ad.style.cssText = "position:absolute;left:0;top:300px;width:300px;height:100px;background:red";
				document.body.appendChild(ad);
			}).observe(document.getElementById("hero"), {attributes: true});
			</script></body></html>`))
	}))
	t.Cleanup(srv.Close)
	res := mustCapture(t, b, Request{URL: srv.URL, BoxTree: true, Stabilize: 5, MaskSelectors: []string{".ad"},
		Viewport: Viewport{Width: 800, Height: 600}, Screenshot: Screenshot{Mode: ModeFull}})
	if res.Stabilization == nil || res.Stabilization.Captures < 2 {
		t.Fatalf("stabilization = %+v, want retakes", res.Stabilization)
	}
	want := Box{X: 0, Y: 300, Width: 300, Height: 100}
	if len(res.Masks) != 1 || res.Masks[0] != want {
		t.Errorf("masks = %+v, want the late ad %+v", res.Masks, want)
	}
	found := false
	for _, e := range res.BoxTree.Elements {
		found = found || e.Classes == "ad"
	}
	if !found {
		t.Errorf("the box tree of %d elements lacks the late ad the screenshot shows", len(res.BoxTree.Elements))
	}
}
