package diff

import (
	"bytes"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

// reference is pixelmatch's main loop without any of Compare's shortcuts
// (no row or pixel skipping, no gray memo), over same-size NRGBA images.
func reference(a, b *image.NRGBA, threshold float64, includeAA bool) (diffs, aa int, out *image.NRGBA) {
	return referenceOver(a, b, threshold, includeAA, false)
}

// referenceOver is reference; checker blends translucent pixels over
// pixelmatch 7's checkerboard (Options.Checkerboard) instead of white.
func referenceOver(a, b *image.NRGBA, threshold float64, includeAA, checker bool) (diffs, aa int, out *image.NRGBA) {
	ra, rb := toRaster(a), toRaster(b)
	w, h := ra.w, ra.h
	out = image.NewNRGBA(a.Rect)
	maxDelta := maxYIQDelta * threshold * threshold
	for y := range h {
		for x := range w {
			pos := y*ra.stride + 4*x
			delta := colorDelta(ra.pix, rb.pix, pos, pos)
			if p, q := ra.pix[pos:pos+4], rb.pix[pos:pos+4]; checker && (p[3] < 255 || q[3] < 255) {
				delta = colorDeltaBlended(p, q, checkerAt(pos), false)
			}
			o := out.Pix[pos : pos+4]
			switch {
			case delta > maxDelta || -delta > maxDelta:
				if !includeAA && (antialiasedOver(ra, rb, x, y, checker) || antialiasedOver(rb, ra, x, y, checker)) {
					aa++
					copy(o, []byte{255, 255, 0, 255})
				} else {
					diffs++
					copy(o, []byte{255, 0, 0, 255})
				}
			default:
				p := ra.pix[pos:]
				v := byte(blend(rgb2y(float64(p[0]), float64(p[1]), float64(p[2])), 0.1*float64(p[3])/255))
				copy(o, []byte{v, v, v, 255})
			}
		}
	}
	return diffs, aa, out
}

// noisyPair makes a page-like image (few colours, runs, repeated rows,
// some translucent pixels) and a copy with scattered edits, shifted runs and noise.
func noisyPair(rng *rand.Rand, w, h int) (*image.NRGBA, *image.NRGBA) {
	colors := []color.NRGBA{{255, 255, 255, 255}, {0, 0, 0, 255}, {128, 128, 128, 255}, {200, 30, 30, 255}, {20, 20, 220, 120}, {240, 240, 240, 255}}
	a := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		if y > 0 && rng.IntN(3) == 0 { // repeated rows, as blank lines are
			copy(a.Pix[y*a.Stride:(y+1)*a.Stride], a.Pix[(y-1)*a.Stride:y*a.Stride])
			continue
		}
		c := colors[0]
		for x := range w {
			if rng.IntN(4) == 0 {
				c = colors[rng.IntN(len(colors))]
			}
			a.SetNRGBA(x, y, c)
		}
	}
	b := image.NewNRGBA(a.Rect)
	copy(b.Pix, a.Pix)
	for range w * h / 10 {
		x, y := rng.IntN(w), rng.IntN(h)
		switch rng.IntN(3) {
		case 0:
			b.SetNRGBA(x, y, colors[rng.IntN(len(colors))])
		case 1:
			if x > 0 {
				b.SetNRGBA(x, y, a.NRGBAAt(x-1, y)) // shift by one pixel
			}
		default:
			c := a.NRGBAAt(x, y)
			c.R += uint8(rng.IntN(40))
			b.SetNRGBA(x, y, c)
		}
	}
	return a, b
}

// TestMatchesReference checks Compare's shortcuts against the plain loop.
func TestMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var totalDiff, totalAA int
	for i := range 40 {
		w, h := 1+rng.IntN(40), 1+rng.IntN(40)
		a, b := noisyPair(rng, w, h)
		for _, includeAA := range []bool{false, true} {
			for _, th := range []float64{0, 0.05, 0.1, 0.3} {
				o := Options{Threshold: th, IncludeAA: includeAA, DiffImage: true}
				if th == 0 {
					o.Threshold = ExactThreshold
				}
				r := mustCompare(t, a, b, o)
				wantDiff, wantAA, wantOut := reference(a, b, th, includeAA)
				if r.DiffPixels != wantDiff || r.AAPixels != wantAA {
					t.Fatalf("case %d %dx%d th %v aa %v: got diff %d aa %d, reference %d %d",
						i, w, h, th, includeAA, r.DiffPixels, r.AAPixels, wantDiff, wantAA)
				}
				totalDiff, totalAA = totalDiff+wantDiff, totalAA+wantAA
				for p := range wantOut.Pix {
					if wantOut.Pix[p] != r.Diff.Pix[p] {
						t.Fatalf("case %d th %v: diff image byte %d is %d, reference %d", i, th, p, r.Diff.Pix[p], wantOut.Pix[p])
					}
				}
			}
		}
	}
	if totalDiff == 0 || totalAA == 0 {
		t.Fatalf("the cases exercise too little: %d diffs, %d anti-aliased", totalDiff, totalAA)
	}
	t.Logf("%d diffs, %d anti-aliased pixels across the cases", totalDiff, totalAA)
}

// TestSizeMismatchComparesOverlap checks that a larger second image is
// compared on the overlap exactly as its crop would be, plus the extra
// pixels counted as different.
func TestSizeMismatchComparesOverlap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10 {
		w, h := 2+rng.IntN(30), 2+rng.IntN(30)
		a, b := noisyPair(rng, w, h)
		bigger, _ := noisyPair(rng, w+3, h+2)
		for y := range h {
			copy(bigger.Pix[y*bigger.Stride:], b.Pix[y*b.Stride:y*b.Stride+4*w])
		}
		want := mustCompare(t, a, b, DefaultOptions())
		got := mustCompare(t, a, bigger, DefaultOptions())
		extra := (w+3)*(h+2) - w*h
		if !got.SizeMismatch || got.DiffPixels != want.DiffPixels+extra || got.AAPixels != want.AAPixels {
			t.Fatalf("%dx%d: got diff %d aa %d, want %d+%d and %d", w, h, got.DiffPixels, got.AAPixels, want.DiffPixels, extra, want.AAPixels)
		}
		if got.SizeA != image.Pt(w, h) || got.SizeB != image.Pt(w+3, h+2) {
			t.Fatalf("sizes %v %v", got.SizeA, got.SizeB)
		}
	}
}

// TestRecolouredAreasMatchReference checks pairs where blocks of one colour
// change to another (every pixel of a block differs, flat in both images:
// antialiased's flat path) mixed with noisy page content, against the
// plain loop.
func TestRecolouredAreasMatchReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 42))
	flat := 0
	for i := range 40 {
		w, h := 3+rng.IntN(60), 3+rng.IntN(60)
		a, b := noisyPair(rng, w, h)
		for range 1 + rng.IntN(4) {
			x0, y0 := rng.IntN(w), rng.IntN(h)
			x1, y1 := min(w, x0+1+rng.IntN(30)), min(h, y0+1+rng.IntN(30))
			ca := color.NRGBA{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), 255}
			cb := color.NRGBA{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(255 - 127*rng.IntN(2))}
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					a.SetNRGBA(x, y, ca)
					if rng.IntN(40) > 0 {
						b.SetNRGBA(x, y, cb)
					}
				}
			}
			flat += (x1 - x0) * (y1 - y0)
		}
		for _, o := range []Options{{DiffImage: true}, {Threshold: 0.3}, {DiffImage: true, Checkerboard: true},
			{DiffImage: true, IncludeAA: true}, {Threshold: 0.05, Checkerboard: true, IncludeAA: true}} {
			r, th := mustCompare(t, a, b, o), o.threshold()
			wantDiff, wantAA, wantOut := referenceOver(a, b, th, o.IncludeAA, o.Checkerboard)
			if r.DiffPixels != wantDiff || r.AAPixels != wantAA {
				t.Fatalf("case %d %dx%d %+v: got diff %d aa %d, reference %d %d", i, w, h, o, r.DiffPixels, r.AAPixels, wantDiff, wantAA)
			}
			if r.Diff != nil && !bytes.Equal(markColours(r.Diff), markColours(wantOut)) {
				t.Fatalf("case %d %dx%d %+v: the diff image marks other pixels than the reference's", i, w, h, o)
			}
		}
	}
	if flat < 5000 {
		t.Fatalf("only %d recoloured pixels", flat)
	}
}

// markColours is the diff image with the faded pixels (grays) zeroed: the
// marks alone (differences, anti-aliasing), which the reference paints as
// Compare does, whatever the fade of translucent pixels.
func markColours(img *image.NRGBA) []byte {
	out := make([]byte, len(img.Pix))
	for i := 0; i < len(out); i += 4 {
		if p := img.Pix[i : i+4]; p[0] != p[1] || p[1] != p[2] {
			copy(out[i:i+4], p)
		}
	}
	return out
}
