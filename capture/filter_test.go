package capture

import (
	"bytes"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/snapq/snapq/filterlist"
)

// thirdParty is a fixture "live site" on loopback: news.test serves a page
// with an ad server's script and slot, an analytics script and a chat
// widget, on hosts Chromium resolves to the fixture (host-resolver-rules),
// as the real web would serve them. It counts the requests by host.
type thirdParty struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newThirdParty(t *testing.T) *thirdParty {
	f := &thirdParty{hits: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.Host)
		f.mu.Lock()
		f.hits[host]++
		f.mu.Unlock()
		switch {
		case host == "news.test" && r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			port := f.port()
			fmt.Fprintf(w, `<!doctype html><html><head><style>body{margin:0;background:#fff}</style></head><body>
				<div class="ad-slot" style="width:300px;height:250px;background:rgb(255,0,0)">AD</div>
				<p id="story">Story</p>
				<script src="http://ib.adnxs.com:%[1]s/ut/v3/prebid.js"></script>
				<script src="http://sb.scorecardresearch.com:%[1]s/beacon.js"></script>
				<script src="http://embed.tawk.to:%[1]s/widget/abc123"></script>
				<script src="http://news.test:%[1]s/app.js"></script>
				</body></html>`, port)
		case strings.HasSuffix(r.URL.Path, ".js") || strings.HasPrefix(r.URL.Path, "/widget/"):
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, "document.body.appendChild(document.createElement('i')).className = %q;", host)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *thirdParty) port() string {
	_, port, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	return port
}

func (f *thirdParty) take() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.hits
	f.hits = map[string]int{}
	return out
}

// Issue 30: block.ads, block.trackers and block.chat_widgets stop the
// requests real filter lists (EasyList, EasyPrivacy, the chat list) name,
// hide the ad slot EasyList's element-hiding rules name, and count both per
// category; the page's own requests go through.
func TestFilterListBlocking(t *testing.T) {
	eng, err := filterlist.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	site := newThirdParty(t)
	b := newBrowser(t, Config{Tabs: 1, Filter: eng, ExtraFlags: map[string]string{"host-resolver-rules": "MAP * 127.0.0.1"}})
	url := "http://news.test:" + site.port() + "/"
	req := Request{URL: url, Viewport: Viewport{Width: 800, Height: 600}, Screenshot: Screenshot{Mode: ModeViewport}}

	plain := mustCapture(t, b, req)
	if got := site.take(); got["ib.adnxs.com"] != 1 || got["sb.scorecardresearch.com"] != 1 || got["embed.tawk.to"] != 1 {
		t.Fatalf("without blocking the page loaded %v, want each third party once", got)
	}
	if plain.Blocking != nil || !redAt(t, plain, 100, 100) {
		t.Fatalf("without blocking: blocking %+v, ad slot shown %v", plain.Blocking, redAt(t, plain, 100, 100))
	}

	req.Block = Block{Ads: true, Trackers: true, ChatWidgets: true}
	res := mustCapture(t, b, req)
	got := site.take()
	for _, h := range []string{"ib.adnxs.com", "sb.scorecardresearch.com", "embed.tawk.to"} {
		if got[h] != 0 {
			t.Errorf("%s was requested %d times with blocking on", h, got[h])
		}
	}
	if got["news.test"] < 2 {
		t.Errorf("the page's own requests: %d, want at least the page and app.js", got["news.test"])
	}
	if res.Blocking == nil {
		t.Fatal("no blocking counts")
	}
	want := map[string]int{"ads": 1, "trackers": 1, "chat_widgets": 1}
	for c, n := range want {
		if res.Blocking.Requests[c] != n {
			t.Errorf("requests blocked: %v, want %v", res.Blocking.Requests, want)
			break
		}
	}
	if res.Blocking.Elements["ads"] < 1 || redAt(t, res, 100, 100) {
		t.Errorf("elements hidden: %v; the red ad slot still shows: %v", res.Blocking.Elements, redAt(t, res, 100, 100))
	}

	req.Block = Block{Trackers: true} // one category: the others load
	one := mustCapture(t, b, req)
	if got := site.take(); got["ib.adnxs.com"] != 1 || got["sb.scorecardresearch.com"] != 0 || one.Blocking.Requests["trackers"] != 1 {
		t.Errorf("trackers only: requests %v, counts %+v", got, one.Blocking)
	}
}

// redAt reports whether the first screenshot is red at (x, y).
func redAt(t *testing.T, res *Result, x, y int) bool {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(res.Images[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	r, g, b, _ := img.At(x, y).RGBA()
	return r>>8 > 200 && g>>8 < 60 && b>>8 < 60
}
