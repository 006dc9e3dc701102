package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// realisticSite serves pages that look like real sites at 1280x720, for
// proofs about image bytes (flat fixture pages make a full-size PNG ~30 KB,
// where real first screens are 150-600 KB): a coloured header and nav, a
// photo-like hero (gradients with per-pixel noise, drawn on a canvas from a
// seed), a dense article in two columns of small text and coloured sidebar
// cards. GET /news/N varies the seed, palette and text by N.
func realisticSite(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/news/%d", &n); err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, realisticPage(n))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var lorem = strings.Fields(`the council voted on tuesday to extend the harbour project after months of
debate over costs residents said traffic near the old market had doubled since spring while engineers
warned that the sea wall needs repairs before winter storms arrive officials expect the first phase to
open next year with new cycle lanes a ferry stop and a public square shops along the quay reported
record sales during the festival although some owners worry about rents rising again analysts noted
that inflation eased slightly in the third quarter as energy prices fell and wages grew faster than
expected the university announced a research centre for coastal ecology funded by a regional grant`)

func words(seed, n int) string {
	var b strings.Builder
	x := uint32(seed*2654435761 + 1)
	for i := range n {
		x = x*1664525 + 1013904223
		w := lorem[int(x>>8)%len(lorem)]
		if i%14 == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		if i%14 == 13 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func realisticPage(n int) string {
	hues := []int{210, 350, 140, 30, 270, 190}
	h := hues[n%len(hues)]
	var cards, paras strings.Builder
	for i := range 5 {
		fmt.Fprintf(&cards, `<div class="card" style="background:hsl(%d,60%%,%d%%)"><b>%s</b><p>%s</p></div>`,
			(h+40*i)%360, 85-5*i, words(n*10+i, 4), words(n*20+i, 22))
	}
	for i := range 9 {
		fmt.Fprintf(&paras, `<p>%s</p>`, words(n*100+i, 70))
	}
	return fmt.Sprintf(`<!doctype html><html><head><meta charset="utf-8"><title>News %[1]d</title><style>
body{margin:0;font:13px/1.45 Georgia,serif;color:#222;background:#fafafa}
header{background:hsl(%[2]d,55%%,28%%);color:#fff;padding:10px 24px;font:bold 24px sans-serif}
nav{background:hsl(%[2]d,45%%,40%%);padding:6px 24px}nav a{color:#fff;margin-right:18px;font:13px sans-serif}
main{display:grid;grid-template-columns:600px 1fr 260px;gap:18px;padding:14px 24px}
canvas{width:600px;height:380px;display:block}
.cap{font:italic 12px sans-serif;color:#555}
.article{column-count:2;column-gap:16px;text-align:justify}
h1{font:bold 26px/1.15 Georgia,serif;margin:0 0 8px}
.card{padding:8px;margin-bottom:8px;border-radius:4px;font:12px sans-serif}.card p{margin:4px 0}
</style></head><body>
<header>The Harbour Gazette <small style="font-size:12px;opacity:.8">edition %[1]d</small></header>
<nav><a>World</a><a>Politics</a><a>Business</a><a>Science</a><a>Culture</a><a>Sport</a><a>Opinion</a><a>Weather</a></nav>
<main><div><canvas id="hero" width="600" height="380"></canvas><div class="cap">%[3]s</div></div>
<div><h1>%[4]s</h1><div class="article">%[5]s</div></div><aside>%[6]s</aside></main>
<script>
// A photo-like image: sky and ground gradients, soft shapes and per-pixel
// noise (camera grain), from a seeded generator so captures repeat.
const c = document.getElementById('hero'), g = c.getContext('2d');
let s = %[1]d * 7919 + 17; const rnd = () => (s = (s * 1103515245 + 12345) %% 2147483648) / 2147483648;
let gr = g.createLinearGradient(0, 0, 0, 380);
gr.addColorStop(0, 'hsl(' + (%[2]d + 180) %% 360 + ',60%%,70%%)'); gr.addColorStop(0.55, 'hsl(%[2]d,40%%,55%%)'); gr.addColorStop(1, 'hsl(' + (%[2]d + 60) %% 360 + ',45%%,25%%)');
g.fillStyle = gr; g.fillRect(0, 0, 600, 380);
for (let i = 0; i < 40; i++) {
  const x = rnd() * 600, y = rnd() * 380, r = 20 + rnd() * 90;
  const rg = g.createRadialGradient(x, y, 0, x, y, r);
  rg.addColorStop(0, 'hsla(' + Math.floor(rnd() * 360) + ',50%%,' + Math.floor(30 + rnd() * 50) + '%%,0.7)'); rg.addColorStop(1, 'hsla(0,0%%,50%%,0)');
  g.fillStyle = rg; g.fillRect(x - r, y - r, 2 * r, 2 * r);
}
const img = g.getImageData(0, 0, 600, 380), d = img.data;
for (let i = 0; i < d.length; i += 4) { const e = (rnd() - 0.5) * 4; d[i] += e; d[i + 1] += e; d[i + 2] += e; }
g.putImageData(img, 0, 0);
</script></body></html>`, n, h, words(n+7, 12), words(n+3, 9), paras.String(), cards.String())
}
