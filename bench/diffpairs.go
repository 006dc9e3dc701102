package main

import (
	"fmt"
	"image"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/snapq/snapq/diff"
)

// diffPair is one pair the diff bench times against pixelmatch.
type diffPair struct {
	name string
	a, b image.Image
	// pngA, pngB are the PNG files pixelmatch decodes itself (pixelmatch's
	// fixtures); empty: it gets the raw straight-alpha pixels of a and b.
	pngA, pngB string
	threshold  float64 // 0: pixelmatch's default 0.1
	runs       int
	kind       string // "busy" or "tall"
	crop       bool   // also time snapq with a cropped diff image
	// checkerboard blends translucent pixels as pixelmatch 7 does
	// (diff.Options.Checkerboard), for its own fixtures.
	checkerboard bool
}

// fixtureDir holds pixelmatch's own test images (ISC, see its README.md).
const fixtureDir = "diff/testdata/pixelmatch"

// fixturePairs are pixelmatch 7.1.0's test pairs (its test/test.js).
func fixturePairs() ([]diffPair, error) {
	var out []diffPair
	for _, p := range [][2]string{{"1a", "1b"}, {"2a", "2b"}, {"3a", "3b"}, {"4a", "4b"}, {"5a", "5b"}, {"6a", "6b"}, {"7a", "7b"}, {"8a", "5b"}} {
		fa, fb := filepath.Join(fixtureDir, p[0]+".png"), filepath.Join(fixtureDir, p[1]+".png")
		a, err := decodeFile(fa)
		if err != nil {
			return nil, err
		}
		b, err := decodeFile(fb)
		if err != nil {
			return nil, err
		}
		out = append(out, diffPair{name: fmt.Sprintf("pixelmatch %s/%s %T", p[0], p[1], a), a: a, b: b,
			pngA: fa, pngB: fb, runs: 7, kind: "busy", checkerboard: true})
	}
	return out, nil
}

func decodeFile(path string) (image.Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (run the bench from the repository root)", err)
	}
	return diff.DecodePNG(data)
}

// textPage draws an opaque w×h text-like page: lines of anti-aliased
// glyph strokes, most in near-black, links in blue and some words in a
// random colour (the edges blend each ink with white, so a page holds
// thousands of distinct colours, as real text rendering does).
func textPage(w, h int, seed uint64) *image.RGBA {
	rng := rand.New(rand.NewPCG(seed, 99))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for y := 40; y+22 <= h; y += 22 {
		if rng.IntN(12) == 0 { // paragraph gap
			continue
		}
		textRun(img, rng, image.Rect(60, y, w-60-rng.IntN(200), y+16))
	}
	return img
}

// textRun sets words of glyphs in r, clipped to r.
func textRun(img *image.RGBA, rng *rand.Rand, r image.Rectangle) {
	for x := r.Min.X; x < r.Max.X; {
		ink := [3]byte{34, 34, 34}
		switch rng.IntN(10) {
		case 0:
			ink = [3]byte{26, 13, 171} // a link
		case 1:
			ink = [3]byte{byte(rng.IntN(200)), byte(rng.IntN(200)), byte(rng.IntN(200))}
		}
		for n := 2 + rng.IntN(8); n > 0 && x+7 < r.Max.X; n-- {
			glyph(img, rng, x, r.Min.Y, ink, r)
			x += 6 + rng.IntN(3)
		}
		x += 5
	}
}

// glyph draws one 6×16 glyph of a vertical stem and a bar or bowl, with a
// one-pixel anti-aliased edge at a random coverage.
func glyph(img *image.RGBA, rng *rand.Rand, x, y int, ink [3]byte, clip image.Rectangle) {
	top := y + 4
	if rng.IntN(3) == 0 {
		top = y // ascender
	}
	sx := x + rng.IntN(4)
	for gy := top; gy < y+13; gy++ {
		stroke(img, sx, gy, ink, 1, clip)
		stroke(img, sx+1, gy, ink, 0.3+0.5*rng.Float64(), clip)
	}
	by := y + 6 + rng.IntN(5)
	for gx := x; gx < x+5; gx++ {
		stroke(img, gx, by, ink, 0.9, clip)
		stroke(img, gx, by+1, ink, 0.2+0.3*rng.Float64(), clip)
	}
}

// stroke blends ink at coverage c over pixel (x, y), inside clip.
func stroke(img *image.RGBA, x, y int, ink [3]byte, c float64, clip image.Rectangle) {
	if !(image.Point{x, y}).In(clip) {
		return
	}
	i := img.PixOffset(x, y)
	for k := range 3 {
		img.Pix[i+k] = byte(float64(img.Pix[i+k])*(1-c) + float64(ink[k])*c)
	}
}

// tallTextPair is a text-like page and a copy with one block of w×h
// re-set with other words at (x, y).
func tallTextPair(pw, ph int, change image.Rectangle) (*image.RGBA, *image.RGBA) {
	a := textPage(pw, ph, 1)
	b := image.NewRGBA(a.Rect)
	copy(b.Pix, a.Pix)
	clearRect(b, change)
	rng := rand.New(rand.NewPCG(5, 5))
	for y := change.Min.Y; y < change.Max.Y; y += 22 {
		textRun(b, rng, image.Rect(change.Min.X, y, change.Max.X, min(y+16, change.Max.Y)))
	}
	return a, b
}

// toNRGBA copies an opaque RGBA into an NRGBA (an RGBA PNG's decoding).
func toNRGBA(m *image.RGBA) *image.NRGBA {
	n := image.NewNRGBA(m.Rect)
	copy(n.Pix, m.Pix)
	return n
}

// noisyPhotoPair is a smooth colour picture and a copy where every other
// pixel moved by a few levels (a re-encoded photo): every row differs, and
// almost every difference is below the threshold.
func noisyPhotoPair(w, h int) (*image.RGBA, *image.RGBA) {
	rng := rand.New(rand.NewPCG(11, 12))
	a := image.NewRGBA(image.Rect(0, 0, w, h))
	gradient(a, a.Rect)
	for i := 0; i < len(a.Pix); i += 4 {
		a.Pix[i] += byte(rng.IntN(16))
	}
	b := image.NewRGBA(a.Rect)
	copy(b.Pix, a.Pix)
	for i := 0; i < len(b.Pix); i += 8 {
		for k := range 3 {
			b.Pix[i+k] += byte(rng.IntN(7))
		}
	}
	clearRect(b, image.Rect(w/3, h/3, w/3+120, h/3+40)) // one real change
	return a, b
}

// strokesPair draws random strokes of random colours and a copy where a
// third of them moved by a pixel or changed colour.
func strokesPair(w, h int) (*image.RGBA, *image.RGBA) {
	rng := rand.New(rand.NewPCG(21, 22))
	a, b := image.NewRGBA(image.Rect(0, 0, w, h)), image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range a.Pix {
		a.Pix[i], b.Pix[i] = 255, 255
	}
	clip := a.Rect
	for range 3000 {
		x, y, l := rng.IntN(w), rng.IntN(h), 10+rng.IntN(80)
		ink := [3]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}
		dx, dy, ink2 := 0, 0, ink
		switch rng.IntN(6) {
		case 0:
			dx = 1
		case 1:
			ink2[0] ^= 0x40
		}
		vertical := rng.IntN(2) == 0
		for k := range l {
			px, py := x+k, y
			if vertical {
				px, py = x, y+k
			}
			stroke(a, px, py, ink, 1, clip)
			stroke(a, px+1, py+1, ink, 0.4, clip)
			stroke(b, px+dx, py+dy, ink2, 1, clip)
			stroke(b, px+dx+1, py+dy+1, ink2, 0.4, clip)
		}
	}
	return a, b
}

// withAlpha is m as an RGBA PNG with an alpha channel decodes (NRGBA):
// white becomes transparent and pixels lighter than mid-gray on every
// channel (anti-aliased edges) half transparent; the rest stays opaque.
func withAlpha(m *image.RGBA) *image.NRGBA {
	n := toNRGBA(m)
	for i := 0; i < len(n.Pix); i += 4 {
		switch r, g, b := n.Pix[i], n.Pix[i+1], n.Pix[i+2]; {
		case r == 255 && g == 255 && b == 255:
			n.Pix[i+3] = 0
		case r > 128 && g > 128 && b > 128:
			n.Pix[i+3] = 128
		}
	}
	return n
}

// generatedPairs are the bench's own pairs (pageImages) and pairs of
// content it was not tuned on: a text-like tall page (as an RGB PNG and an
// RGBA PNG decode), a re-encoded photo (many pixels a few levels off),
// random colour strokes, opaque and with an alpha channel.
func generatedPairs() []diffPair {
	a, b := pageImages(1280, 720)
	ta, _ := pageImages(1280, 20000)
	tb := image.NewRGBA(ta.Rect)
	copy(tb.Pix, ta.Pix)
	clearRect(tb, image.Rect(400, 12000+96, 520, 12000+112)) // one word gone
	xa, xb := tallTextPair(1280, 20000, image.Rect(400, 12000, 600, 12100))
	pa, pb := noisyPhotoPair(1280, 720)
	sa, sb := strokesPair(1280, 720)
	return []diffPair{
		{name: "bench 1280x720 busy pair", a: a, b: b, runs: 7, kind: "busy"},
		{name: "bench 1280x20000 page, one word gone", a: ta, b: tb, runs: 7, kind: "tall", crop: true},
		{name: "text 1280x20000, one 200x100 change, *image.RGBA", a: xa, b: xb, runs: 7, kind: "tall", crop: true},
		{name: "text 1280x20000, one 200x100 change, *image.NRGBA", a: toNRGBA(xa), b: toNRGBA(xb), runs: 7, kind: "tall"},
		{name: "photo 1280x720, half the pixels a few levels off", a: pa, b: pb, runs: 7, kind: "busy"},
		{name: "strokes 1280x720, random colours, a third moved", a: sa, b: sb, runs: 7, kind: "busy"},
		{name: "strokes 1280x720 with alpha (transparent background, translucent edges), *image.NRGBA", a: withAlpha(sa), b: withAlpha(sb),
			runs: 7, kind: "busy", checkerboard: true},
	}
}
