package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The noise benchmark's "live site" (noise.go): pages served on loopback
// that change by themselves the way real sites do, and a switch to inject
// one real change into one page.
//
//	site    127.0.0.2  /p/NN pages: relative timestamps ("3 minutes ago"), a
//	                   live visitor counter, an A/B variant of the hero drawn
//	                   at random per request, a JS carousel on a random first
//	                   slide, lazy images served late, a newsletter modal on a
//	                   delay, the masthead in a web font served slowly by
//	ads     127.0.0.3  a rotating ad slot: /ad_rotator/rotate.js fills the
//	                   page's .ad-slot with an <iframe src=/ad.html?…> creative
//	                   of a random colour and text (both paths are EasyList's)
//	track   127.0.0.4  /matomo.js (EasyPrivacy): a beacon and a feedback tab
//	                   at a random height
//	widgets 127.0.0.5  a chat bubble (#intercom-container) with a random
//	                   unread count, a share bar (.share-buttons, from
//	                   /wp-content/plugins/add-to-any/addtoany.min.js: AdGuard
//	                   Social) with random counts, a cookie notice
//	                   (#cookie-notice, from /cookie-notice.js: AdGuard Cookie
//	                   Notices) drawn after a random delay
//	fonts   127.0.0.6  /fonts/brand.ttf after 1.2 s
//
// Every volatile element keeps its box (fixed sizes), as on a site built
// with care, so a page keeps its height; what changes is inside the boxes.

// noiseChange kinds injected as real changes.
var noiseChangeKinds = []string{"text", "colour", "layout", "removed"}

// noiseSite is the running fixture.
type noiseSite struct {
	hosts     map[string]string // role → http://addr:port
	published time.Time         // what the relative timestamps count from
	mu        sync.Mutex
	page      int    // the page with an injected change (0: none)
	kind      string // its kind
	stops     []func()
}

// noiseRoles are the fixture's hosts, in the order of -noise-addrs.
var noiseRoles = []string{"site", "ads", "track", "widgets", "fonts"}

// serveNoiseSite starts one server per role on addrs (loopback, one each).
func serveNoiseSite(addrs []string) (*noiseSite, error) {
	if len(addrs) < len(noiseRoles) {
		return nil, fmt.Errorf("-noise-addrs: want %d loopback addresses, got %d", len(noiseRoles), len(addrs))
	}
	s := &noiseSite{hosts: map[string]string{}, published: time.Now().Add(-150 * time.Second)}
	handlers := map[string]http.HandlerFunc{"site": s.serveSite, "ads": s.serveAds, "track": s.serveTrack,
		"widgets": s.serveWidgets, "fonts": s.serveFonts}
	for i, role := range noiseRoles {
		ln, err := net.Listen("tcp", addrs[i]+":0")
		if err != nil {
			s.close()
			return nil, fmt.Errorf("noise site %s on %s: %w", role, addrs[i], err)
		}
		srv := &http.Server{Handler: handlers[role], ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		s.stops = append(s.stops, func() { srv.Close() })
		s.hosts[role] = "http://" + ln.Addr().String()
	}
	return s, nil
}

func (s *noiseSite) close() {
	for _, stop := range s.stops {
		stop()
	}
}

// url is page n's address.
func (s *noiseSite) url(n int) string { return fmt.Sprintf("%s/p/%02d", s.hosts["site"], n) }

// inject makes page n show a real change of kind until clear.
func (s *noiseSite) inject(n int, kind string) {
	s.mu.Lock()
	s.page, s.kind = n, kind
	s.mu.Unlock()
}

func (s *noiseSite) clear() { s.inject(0, "") }

func (s *noiseSite) change(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.page == n {
		return s.kind
	}
	return ""
}

func noStore(w http.ResponseWriter, ctype string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Access-Control-Allow-Origin", "*")
}

func (s *noiseSite) serveSite(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/img/") { // lazy images, late
		time.Sleep(time.Duration(200+rand.IntN(1300)) * time.Millisecond)
		noStore(w, "image/svg+xml")
		fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="360" height="160"><rect width="360" height="160" fill="hsl(%d,45%%,70%%)"/></svg>`,
			len(r.URL.Path)*37%360)
		return
	}
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
	if err != nil || n < 1 {
		http.NotFound(w, r)
		return
	}
	noStore(w, "text/html; charset=utf-8")
	fmt.Fprint(w, s.pageHTML(n, s.change(n), rand.IntN(2) == 1))
}

// pageHTML is page n, with a real change of kind ("" for none) and the
// A/B test's variant B or A.
func (s *noiseSite) pageHTML(n int, kind string, variantB bool) string {
	hue := n * 47 % 360
	title, titleStyle, shift, second := fmt.Sprintf("Harbour report %d: the council's plan", n), "", "", noiseWords(n*7+2, 60)
	switch kind {
	case "text":
		title = fmt.Sprintf("Harbour report %d: the plan is withdrawn", n)
	case "colour":
		titleStyle = ` style="color:#c0101a"`
	case "layout":
		shift = `<div style="height:64px;background:#eee">Correction: an earlier version misnamed the harbour.</div>`
	case "removed":
		second = ""
	}
	cta, ctaColor := "Start your free trial", "#1d5fd6"
	if variantB {
		cta, ctaColor = "Try it free today", "#1a8f3c"
	}
	return fmt.Sprintf(`<!doctype html><html><head><meta charset="utf-8"><title>Report %[1]d</title><style>
@font-face{font-family:Brand;src:url(%[2]s/fonts/brand.ttf) format("truetype");font-display:swap}
body{margin:0;font:15px/1.5 sans-serif;color:#222;background:#fafafa}
header{background:hsl(%[3]d,50%%,30%%);color:#fff;padding:12px 24px;font:bold 24px Brand,serif;height:34px}
main{display:grid;grid-template-columns:760px 1fr;gap:24px;padding:16px 24px}
h1{font:bold 28px/1.2 serif;margin:0 0 6px}
.meta{color:#666;font-size:13px;height:20px}
.hero{height:70px;display:flex;align-items:center;gap:16px}
.hero a{display:inline-block;width:200px;text-align:center;padding:10px 18px;color:#fff;border-radius:4px;text-decoration:none}
#carousel{height:150px;color:#fff;font:bold 22px sans-serif;display:flex;align-items:center;justify-content:center;border-radius:6px}
.ad-slot{width:300px;height:250px;background:#f0f0f0;margin-bottom:16px}
.ad-slot iframe{border:0;width:300px;height:250px}
.share-buttons{height:32px;font-size:13px}
.lazy img{display:block;margin:8px 0}
#newsletter-modal{position:fixed;left:50%%;top:30%%;width:420px;margin-left:-210px;padding:24px;background:#fff;border:2px solid #333}
</style></head><body>
<header>The Harbour Gazette</header>
<main><article>
<h1%[4]s>%[5]s</h1>
<div class="meta">Published <span class="reltime" data-t="%[6]d"></span> · <span class="visitors">1,204</span> people reading now</div>
<div class="share-buttons"></div>
%[7]s
<div class="hero" data-variant="%[8]s"><a href="#" style="background:%[9]s">%[10]s</a><span>No card needed.</span></div>
<p>%[11]s</p><p class="second">%[12]s</p>
<div id="carousel"></div>
<p>%[13]s</p>
<div class="lazy"><img loading="lazy" width="360" height="160" src="/img/%[1]d-a.svg" alt=""><img loading="lazy" width="360" height="160" src="/img/%[1]d-b.svg" alt=""></div>
</article><aside><div class="ad-slot"></div><div class="ad-slot"></div><p>%[14]s</p></aside></main>
<script>
const fmt = (s) => s < 60 ? s + " seconds ago" : Math.floor(s / 60) + (s < 120 ? " minute ago" : " minutes ago");
const tick = () => { for (const el of document.querySelectorAll(".reltime")) el.textContent = fmt(Math.floor(Date.now() / 1000) - +el.dataset.t);
  document.querySelector(".visitors").textContent = (1100 + Math.floor(Math.random() * 300)).toLocaleString("en-US"); };
tick(); setInterval(tick, 1000);
const slides = [["#c44", "Summer sale"], ["#4a4", "New routes"], ["#46c", "Join the club"]];
let cur = Math.floor(Math.random() * 3);
const show = () => { const c = document.getElementById("carousel"); c.style.background = slides[cur][0]; c.textContent = slides[cur][1]; cur = (cur + 1) %% 3; };
show(); setInterval(show, 1500);
setTimeout(() => { const m = document.createElement("div"); m.id = "newsletter-modal";
  m.innerHTML = "<b>Get the weekly digest</b><p>Every Friday, the week's harbour news.</p><button>Subscribe</button>"; document.body.appendChild(m); }, 6000);
</script>
<script src="%[15]s/ad_rotator/rotate.js"></script>
<script src="%[16]s/matomo.js"></script>
<script src="%[17]s/chat/widget.js"></script>
<script src="%[17]s/wp-content/plugins/add-to-any/addtoany.min.js"></script>
<script src="%[17]s/cookie-notice.js"></script>
</body></html>`, n, s.hosts["fonts"], hue, titleStyle, title, s.published.Unix(), shift,
		map[bool]string{true: "B", false: "A"}[variantB], ctaColor, cta,
		noiseWords(n*7+1, 70), second, noiseWords(n*7+3, 80), noiseWords(n*7+4, 40),
		s.hosts["ads"], s.hosts["track"], s.hosts["widgets"])
}

func (s *noiseSite) serveAds(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/ad_rotator/rotate.js":
		noStore(w, "text/javascript")
		fmt.Fprintf(w, `for (const slot of document.querySelectorAll(".ad-slot")) { const f = document.createElement("iframe");
  f.src = %q + "/ad.html?c=" + Math.floor(Math.random() * 1e6); slot.appendChild(f); }`, s.hosts["ads"])
	case "/ad.html":
		c, _ := strconv.Atoi(r.URL.Query().Get("c"))
		noStore(w, "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><body style="margin:0;background:hsl(%d,70%%,50%%);font:bold 26px sans-serif;color:#fff">
<div style="padding:30px">%s<br><small>Sponsored</small></div></body>`, c%360, []string{"Cheap flights!", "New phone, 0%", "Bank bonus", "Win a cruise"}[c%4])
	default:
		http.NotFound(w, r)
	}
}

func (s *noiseSite) serveTrack(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/matomo.js":
		noStore(w, "text/javascript")
		fmt.Fprintf(w, `new Image().src = %q + "/matomo.php?idsite=1&r=" + Math.random();
const t = document.createElement("div"); t.textContent = "Feedback";
t.style.cssText = "position:fixed;right:0;top:" + (200 + Math.floor(Math.random() * 200)) + "px;background:#e40;color:#fff;padding:8px 4px;writing-mode:vertical-rl";
document.body.appendChild(t);`, s.hosts["track"])
	case "/matomo.php":
		noStore(w, "image/gif")
	default:
		http.NotFound(w, r)
	}
}

func (s *noiseSite) serveWidgets(w http.ResponseWriter, r *http.Request) {
	noStore(w, "text/javascript")
	switch r.URL.Path {
	case "/chat/widget.js":
		fmt.Fprint(w, `const c = document.createElement("div"); c.id = "intercom-container";
c.style.cssText = "position:fixed;right:20px;bottom:20px;width:60px;height:60px;border-radius:30px;background:#286efa";
c.innerHTML = "<span style='position:absolute;top:-4px;right:-4px;background:#e22;color:#fff;border-radius:9px;padding:0 6px;font:12px sans-serif'>" + (1 + Math.floor(Math.random() * 9)) + "</span>";
document.body.appendChild(c);`)
	case "/wp-content/plugins/add-to-any/addtoany.min.js":
		fmt.Fprint(w, `for (const b of document.querySelectorAll(".share-buttons")) b.textContent =
  "Share: " + (100 + Math.floor(Math.random() * 900)) + " · Tweet: " + Math.floor(Math.random() * 90) + " · Email";`)
	case "/cookie-notice.js":
		fmt.Fprint(w, `setTimeout(() => { const n = document.createElement("div"); n.id = "cookie-notice";
  n.style.cssText = "position:fixed;left:0;right:0;bottom:0;height:56px;background:#222;color:#fff;padding:12px 24px";
  n.textContent = "We use cookies to improve your experience. Accept?"; document.body.appendChild(n); }, Math.floor(Math.random() * 600));`)
	default:
		http.NotFound(w, r)
	}
}

func (s *noiseSite) serveFonts(w http.ResponseWriter, r *http.Request) {
	time.Sleep(1200 * time.Millisecond)
	b, err := os.ReadFile("/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf")
	if err != nil || r.URL.Path != "/fonts/brand.ttf" {
		http.NotFound(w, r) // no font on this machine: the fallback stays, late
		return
	}
	noStore(w, "font/ttf")
	w.Write(b)
}

var noiseLorem = strings.Fields(`the council voted on tuesday to extend the harbour project after months of
debate over costs residents said traffic near the old market had doubled since spring while engineers
warned that the sea wall needs repairs before winter storms arrive officials expect the first phase to
open next year with new cycle lanes a ferry stop and a public square shops along the quay reported`)

// noiseWords is n words of text, the same for the same seed.
func noiseWords(seed, n int) string {
	var b strings.Builder
	x := uint32(seed*2654435761 + 1)
	for range n {
		x = x*1664525 + 1013904223
		b.WriteString(noiseLorem[int(x>>8)%len(noiseLorem)])
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}
