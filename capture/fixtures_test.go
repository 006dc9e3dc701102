package capture

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/webp"

	"github.com/snapq/snapq/capture/markup"
	"github.com/snapq/snapq/internal/testenv"
)

// The integration tests share one fixture server (loopback only) and one Browser.
var (
	fixtures *httptest.Server

	sharedOnce sync.Once
	shared     *Browser
	sharedErr  error
)

func TestMain(m *testing.M) {
	fixtures = httptest.NewServer(fixtureHandler()) // listens on 127.0.0.1
	code := m.Run()
	if shared != nil {
		_ = shared.Close()
	}
	fixtures.Close()
	os.Exit(code)
}

// needChromium skips (or fails under CI=true) when Chromium is not installed.
func needChromium(t *testing.T) {
	t.Helper()
	if err := checkExecutable(DefaultChromeBin); err != nil {
		testenv.Unavailable(t, "chromium", err)
	}
}

// sharedBrowser returns the Browser shared by the integration tests (2 tabs).
func sharedBrowser(t *testing.T) *Browser {
	t.Helper()
	needChromium(t)
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shared, sharedErr = New(ctx, Config{Tabs: 2, Logger: testLogger(), Markup: markup.Codec{}})
	})
	if sharedErr != nil {
		t.Fatalf("start shared browser: %v", sharedErr)
	}
	return shared
}

// newBrowser starts a Browser owned by one test.
// newPortBrowser is newBrowser with Chromium's DevTools on a port instead of its pipe.
func newPortBrowser(t *testing.T, cfg Config) *Browser {
	t.Helper()
	needChromium(t)
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	if cfg.Markup == nil {
		cfg.Markup = markup.Codec{}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b := unstartedBrowser(cfg.withDefaults())
	b.devtoolsPort = true
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("start a browser with a DevTools port: %v", err)
	}
	return b
}

func newBrowser(t *testing.T, cfg Config) *Browser {
	t.Helper()
	needChromium(t)
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	if cfg.Markup == nil {
		cfg.Markup = markup.Codec{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// bandColor is the colour of the i-th band of /page: never red, distinct for neighbours.
func bandColor(i int) color.RGBA {
	return color.RGBA{R: 0, G: uint8(40 + (i*53)%200), B: uint8(250 - (i*31)%150), A: 255}
}

var red = color.RGBA{R: 255, A: 255}

// fixtureHandler serves the test pages.
func fixtureHandler() http.Handler {
	mux := http.NewServeMux()
	// /page?h=2000&band=720: a document exactly h px tall made of coloured bands, under a
	// 40 px fixed red header.
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		h := atoiOr(r.URL.Query().Get("h"), 2000)
		band := atoiOr(r.URL.Query().Get("band"), 720)
		var b strings.Builder
		fmt.Fprintf(&b, `<!doctype html><html><head><title>page %d</title><style>
html,body{margin:0;padding:0}
#hdr{position:fixed;top:0;left:0;right:0;height:40px;background:#f00;z-index:9}
.b{width:100%%}
</style></head><body><div id="hdr"></div>`, h)
		for y, i := 0, 0; y < h; y, i = y+band, i+1 {
			c := bandColor(i)
			fmt.Fprintf(&b, `<div class="b" style="height:%dpx;background:rgb(%d,%d,%d)"></div>`, min(band, h-y), c.R, c.G, c.B)
		}
		b.WriteString(`</body></html>`)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	})
	mux.HandleFunc("/notfound", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`<!doctype html><title>gone</title><h1>Not here</h1>`))
	})
	mux.HandleFunc("/empty500", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/page?h=100", http.StatusFound)
	})
	mux.HandleFunc("/hidden", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><title>hidden</title><div id="x" style="display:none">x</div>`))
	})
	// /late: content (and the title) arrive from a request made 300 ms after load.
	mux.HandleFunc("/late", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><title>early</title><script>
addEventListener("load", () => setTimeout(() => fetch("/slowdata").then(r => r.text()).then(t => {
  document.title = t;
  const d = document.createElement("div"); d.id = "late"; d.textContent = t; document.body.appendChild(d);
}), 300));
</script><body></body>`))
	})
	mux.HandleFunc("/slowdata", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		_, _ = w.Write([]byte("late"))
	})
	// /state reports the cookies, localStorage and sessionStorage it finds, then sets them.
	mux.HandleFunc("/state", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "srv", Value: "1", Path: "/", MaxAge: 3600})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>?</title><script>
const found = "header=" + %s + ";cookie=" + document.cookie +
  ";local=" + (localStorage.getItem("k") || "") + ";session=" + (sessionStorage.getItem("k") || "");
document.cookie = "js=1; path=/; max-age=3600";
localStorage.setItem("k", "1");
sessionStorage.setItem("k", "1");
const after = "cookie=" + document.cookie + ";local=" + localStorage.getItem("k") + ";session=" + sessionStorage.getItem("k");
document.title = found + "|" + after;
</script>`, strconv.Quote(r.Header.Get("Cookie")))
	})
	return mux
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// decode decodes an image of the given format and checks its header size matches the Image.
func decode(t *testing.T, img Image) image.Image {
	t.Helper()
	var (
		m   image.Image
		err error
	)
	switch img.ContentType {
	case "image/png":
		m, err = png.Decode(bytes.NewReader(img.Data))
	case "image/jpeg":
		m, err = jpeg.Decode(bytes.NewReader(img.Data))
	case "image/webp":
		m, err = webp.Decode(bytes.NewReader(img.Data))
	default:
		t.Fatalf("%s: unexpected content type %q", img.Name, img.ContentType)
	}
	if err != nil {
		t.Fatalf("%s: decode: %v", img.Name, err)
	}
	if b := m.Bounds(); b.Dx() != img.Width || b.Dy() != img.Height {
		t.Fatalf("%s: decoded %dx%d, Image says %dx%d", img.Name, b.Dx(), b.Dy(), img.Width, img.Height)
	}
	return m
}

// near reports whether the pixel at (x, y) is within tol of want on every channel.
func near(m image.Image, x, y int, want color.RGBA, tol int) bool {
	r, g, b, _ := m.At(m.Bounds().Min.X+x, m.Bounds().Min.Y+y).RGBA()
	d := func(a uint32, b uint8) bool { v := int(a>>8) - int(b); return v <= tol && v >= -tol }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

func pixel(m image.Image, x, y int) string {
	r, g, b, _ := m.At(m.Bounds().Min.X+x, m.Bounds().Min.Y+y).RGBA()
	return fmt.Sprintf("rgb(%d,%d,%d)", r>>8, g>>8, b>>8)
}
