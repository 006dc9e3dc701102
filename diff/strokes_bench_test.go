package diff

import (
	"image"
	"math/rand/v2"
	"testing"
)

// strokesPair is bench/diffpairs.go's strokesPair: random strokes of random
// colours with a translucent-looking edge, and a copy where a third of them
// moved by a pixel or changed colour (most differing pixels are over the
// threshold and go through anti-aliasing detection).
func strokesPair(w, h int) (*image.RGBA, *image.RGBA) {
	rng := rand.New(rand.NewPCG(21, 22))
	a, b := image.NewRGBA(image.Rect(0, 0, w, h)), image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range a.Pix {
		a.Pix[i], b.Pix[i] = 255, 255
	}
	for range 3000 {
		x, y, l := rng.IntN(w), rng.IntN(h), 10+rng.IntN(80)
		ink := [3]byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}
		dx, ink2 := 0, ink
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
			strokeAt(a, px, py, ink, 1)
			strokeAt(a, px+1, py+1, ink, 0.4)
			strokeAt(b, px+dx, py, ink2, 1)
			strokeAt(b, px+dx+1, py+1, ink2, 0.4)
		}
	}
	return a, b
}

// strokeAt blends ink at coverage c over pixel (x, y) when it is inside img.
func strokeAt(img *image.RGBA, x, y int, ink [3]byte, c float64) {
	if !(image.Point{X: x, Y: y}).In(img.Rect) {
		return
	}
	i := img.PixOffset(x, y)
	for k := range 3 {
		img.Pix[i+k] = byte(float64(img.Pix[i+k])*(1-c) + float64(ink[k])*c)
	}
}

// strokesWithAlpha is bench/diffpairs.go's withAlpha: white transparent,
// pixels lighter than mid-gray on every channel half transparent.
func strokesWithAlpha(m *image.RGBA) *image.NRGBA {
	n := image.NewNRGBA(m.Rect)
	copy(n.Pix, m.Pix)
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

// BenchmarkStrokes times Compare with a diff image on the bench's random
// strokes, opaque and with alpha over the checkerboard (the bench's options).
func BenchmarkStrokes(b *testing.B) {
	sa, sb := strokesPair(1280, 720)
	cases := []struct {
		name string
		a, b image.Image
		o    Options
	}{
		{"opaque", sa, sb, DefaultOptions()},
		{"alpha", strokesWithAlpha(sa), strokesWithAlpha(sb), Options{Threshold: DefaultThreshold, DiffImage: true, Checkerboard: true}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var r *Result
			for b.Loop() {
				var err error
				if r, err = Compare(c.a, c.b, c.o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.DiffPixels), "diffpx")
		})
	}
}
