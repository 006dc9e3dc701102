package diff

import (
	"encoding/binary"
	"image"
	"image/color"
	"image/draw"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFadedOpaqueExact checks the integer fade against the floating-point
// one for every opaque colour.
func TestFadedOpaqueExact(t *testing.T) {
	t.Parallel()
	for p := uint32(0); p < 1<<24; p++ {
		if got, want := fadedOpaque(p|0xff000000), fadedColor(p|0xff000000); got != want {
			t.Fatalf("colour %06x: integer fade %08x, float %08x", p, got, want)
		}
	}
}

// TestFadedOpaquePairExact checks the two-pixel fade against fadedOpaque
// for every opaque colour, in either half of the word (the other half a
// different colour, so a carry between the halves would show).
func TestFadedOpaquePairExact(t *testing.T) {
	t.Parallel()
	for p := uint32(0); p < 1<<24; p++ {
		q := p*2654435761>>8 | 0xff000000 // another colour
		p := p | 0xff000000
		for _, w := range []uint64{uint64(p) | uint64(q)<<32, uint64(q) | uint64(p)<<32} {
			got, want := fadedOpaquePair(w), uint64(fadedOpaque(uint32(w)))|uint64(fadedOpaque(uint32(w>>32)))<<32
			if got != want {
				t.Fatalf("pixels %016x: pair fade %016x, fadedOpaque %016x", w, got, want)
			}
		}
	}
}

// TestLargeDeltaBound checks that yiqLambdaMin bounds the YIQ distance of
// opaque pixels from below for every difference of channels.
func TestLargeDeltaBound(t *testing.T) {
	t.Parallel()
	for dr := -255; dr <= 255; dr++ {
		for dg := -255; dg <= 255; dg++ {
			for db := -255; db <= 255; db++ {
				p := []byte{byte(max(dr, 0)), byte(max(dg, 0)), byte(max(db, 0)), 255}
				q := []byte{byte(max(-dr, 0)), byte(max(-dg, 0)), byte(max(-db, 0)), 255}
				d2 := float64(dr*dr + dg*dg + db*db)
				if d := math.Abs(opaqueDelta(p, q)); d < yiqLambdaMin*d2 {
					t.Fatalf("channel differences (%d, %d, %d): delta %v below the bound %v", dr, dg, db, d, yiqLambdaMin*d2)
				}
			}
		}
	}
}

// TestSmallDeltaBound checks that yiqLambda bounds the YIQ distance of
// opaque pixels by their squared channel distance, on the axes' extremes
// and on random channel differences.
func TestSmallDeltaBound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 9))
	check := func(p, q []byte) {
		dr, dg, db := float64(int(p[0])-int(q[0])), float64(int(p[1])-int(q[1])), float64(int(p[2])-int(q[2]))
		if d := math.Abs(opaqueDelta(p, q)); d > yiqLambda*(dr*dr+dg*dg+db*db) {
			t.Fatalf("%v vs %v: delta %v above the bound %v", p, q, d, yiqLambda*(dr*dr+dg*dg+db*db))
		}
	}
	for v := range 1 << 9 { // every corner direction, scaled
		p := []byte{byte(v & 1 * 255), byte(v >> 1 & 1 * 255), byte(v >> 2 & 1 * 255), 255}
		q := []byte{byte(v >> 3 & 1 * 255), byte(v >> 4 & 1 * 255), byte(v >> 5 & 1 * 255), 255}
		check(p, q)
	}
	for range 2_000_000 {
		p := []byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), 255}
		q := []byte{byte(int(p[0]) + rng.IntN(9) - 4), byte(int(p[1]) + rng.IntN(9) - 4), byte(int(p[2]) + rng.IntN(9) - 4), 255}
		check(p, q)
		check(p, []byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), 255})
	}
}

// TestParallelMatchesReference checks the row-parallel comparison (images
// of several chunks) against the plain loop, diff image byte for byte, and
// masks, a cropped diff image and a size change against their sequential
// meaning.
func TestParallelMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 4 {
		w, h := 100+rng.IntN(300), 300+rng.IntN(500)
		a, b := noisyPair(rng, w, h)
		for _, includeAA := range []bool{false, true} {
			r := mustCompare(t, a, b, Options{IncludeAA: includeAA, DiffImage: true})
			wantDiff, wantAA, wantOut := reference(a, b, DefaultThreshold, includeAA)
			if r.DiffPixels != wantDiff || r.AAPixels != wantAA {
				t.Fatalf("case %d %dx%d aa %v: diff %d aa %d, reference %d %d", i, w, h, includeAA, r.DiffPixels, r.AAPixels, wantDiff, wantAA)
			}
			if string(r.Diff.Pix) != string(wantOut.Pix) {
				t.Fatalf("case %d %dx%d: the diff image differs from the reference", i, w, h)
			}
		}
	}
}

// TestParallelTranslucentRestart: an image.RGBA taken as opaque whose
// translucent row sits far down a tall image is compared as its
// straight-alpha copy would be.
func TestParallelTranslucentRestart(t *testing.T) {
	t.Parallel()
	x, y := pagePair(300, 2000)
	y.SetRGBA(7, 1900, color.RGBA{10, 20, 30, 40})
	want := image.NewNRGBA(y.Rect)
	draw.Draw(want, want.Rect, y, image.Point{}, draw.Src)
	got := mustCompare(t, x, y, DefaultOptions())
	ref := mustCompare(t, x, want, DefaultOptions())
	if got.DiffPixels != ref.DiffPixels || got.AAPixels != ref.AAPixels || got.Bounds != ref.Bounds || string(got.Diff.Pix) != string(ref.Diff.Pix) {
		t.Fatalf("RGBA with a translucent row: diff %d aa %d %v, straight-alpha copy %d %d %v",
			got.DiffPixels, got.AAPixels, got.Bounds, ref.DiffPixels, ref.AAPixels, ref.Bounds)
	}
}

// TestParallelMasksAndSizes: masks, a size change and a cropped diff image
// on an image of many chunks count as on its pieces.
func TestParallelMasksAndSizes(t *testing.T) {
	t.Parallel()
	x, y := pagePair(200, 3000)
	bigger := image.NewRGBA(image.Rect(0, 0, 203, 3010))
	draw.Draw(bigger, y.Rect, y, image.Point{}, draw.Src)
	mask := []image.Rectangle{image.Rect(0, 1500, 50, 1520), image.Rect(10, 0, 20, 3000)}
	want := mustCompare(t, x, y, Options{Mask: mask})
	got := mustCompare(t, x, bigger, Options{Mask: mask, DiffImage: true, DiffCrop: 8})
	extra := 203*3010 - 200*3000
	if got.DiffPixels != want.DiffPixels+extra || got.AAPixels != want.AAPixels || got.MaskedPixels != want.MaskedPixels {
		t.Fatalf("bigger: diff %d aa %d masked %d, want %d+%d, %d, %d masked",
			got.DiffPixels, got.AAPixels, got.MaskedPixels, want.DiffPixels, extra, want.AAPixels, want.MaskedPixels)
	}
	if want.MaskedPixels != 20*50+10*3000-10*20 {
		t.Fatalf("masked %d pixels, want %d", want.MaskedPixels, 20*50+10*3000-10*20)
	}
}

// TestLumaIntOrder checks what makes integer lumas order neighbours as
// pixelmatch's floating point does: no two channel triples within 0–255
// have the same weighted sum (no nonzero difference triple within ±510
// sums to 0).
func TestLumaIntOrder(t *testing.T) {
	t.Parallel()
	for x := int64(-510); x <= 510; x++ {
		for y := int64(-510); y <= 510; y++ {
			s := lumaR*x + lumaG*y
			if s%lumaB != 0 {
				continue
			}
			if z := -s / lumaB; z >= -510 && z <= 510 && (x != 0 || y != 0 || z != 0) {
				t.Fatalf("(%d, %d, %d) has a zero weighted sum", x, y, z)
			}
		}
	}
}

// TestAntialiasedOpaqueMatchesFloat compares the integer anti-aliasing
// test with pixelmatch's floating-point one on opaque noisy images.
func TestAntialiasedOpaqueMatchesFloat(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	aa := 0
	for range 30 {
		w, h := 2+rng.IntN(30), 2+rng.IntN(30)
		a, b := noisyPair(rng, w, h)
		for i := 3; i < len(a.Pix); i += 4 {
			a.Pix[i], b.Pix[i] = 255, 255
		}
		ra, rb := toRaster(a), toRaster(b)
		for y := range h {
			for x := range w {
				got, ok := antialiasedOpaque(ra, rb, x, y)
				if want := antialiasedFloat(ra, rb, x, y, bgWhite); !ok || got != want {
					t.Fatalf("%dx%d at (%d, %d): integer %v (ok %v), float %v", w, h, x, y, got, ok, want)
				}
				if got {
					aa++
				}
			}
		}
	}
	if aa == 0 {
		t.Fatal("no pixel was anti-aliasing: the cases exercise too little")
	}
}

// TestAntialiasedInteriorMatchesFloat compares the comparer's
// anti-aliasing test (antialiasedInside off the edges: one load of the
// neighbourhood, branch-free extremes) with pixelmatch's floating-point one
// on noisy images, opaque (many equally bright neighbours: ties) and with
// translucent pixels, over white and over the checkerboard.
func TestAntialiasedInteriorMatchesFloat(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	aa := 0
	for i := range 60 {
		w, h := 2+rng.IntN(40), 2+rng.IntN(40)
		a, b := noisyPair(rng, w, h)
		if i%2 == 0 {
			for k := 3; k < len(a.Pix); k += 4 {
				a.Pix[k], b.Pix[k] = 255, 255
			}
		}
		checker := i%4 == 1
		c := newComparer(toRaster(a), toRaster(b), Options{Checkerboard: checker})
		for y := range h {
			for x := range w {
				bg := bgWhite
				if checker {
					bg = checkerAt(4 * (y*w + x))
				}
				want := antialiasedFloat(c.a, c.b, x, y, bg) || antialiasedFloat(c.b, c.a, x, y, bg)
				if got := c.antialiased(x, y, pixelAt(&c.a, x, y), pixelAt(&c.b, x, y)); got != want {
					t.Fatalf("case %d, %dx%d at (%d, %d): %v, float %v", i, w, h, x, y, got, want)
				}
				if want {
					aa++
				}
			}
		}
	}
	if aa == 0 {
		t.Fatal("no pixel was anti-aliasing: the cases exercise too little")
	}
}

// TestTruncDiv checks the checkerboard's truncated quotients, taken by a
// multiplication, against pixelmatch's division for every byte index of
// a pixel (multiples of 4) of a canvas up to MaxPixels.
func TestTruncDiv(t *testing.T) {
	t.Parallel()
	for _, d := range []float64{1.618033988749895, 2.618033988749895} {
		inv := 1 / d
		for k := 0; k < 4*MaxPixels; k += 4 {
			f := float64(k)
			if got, want := truncDiv(f, d, inv), int32(f/d); got != want {
				t.Fatalf("%v / %v: %d by multiplication, %d by division", f, d, got, want)
			}
		}
	}
}

// TestCheckerDeltaOpaqueOrClear checks the integer channel differences of
// opaque and transparent pixels over the checkerboard against
// pixelmatch's arithmetic, bit for bit, on random colours over every
// checkerboard colour.
func TestCheckerDeltaOpaqueOrClear(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 1 << 20 {
		bg := checkerAt(4 * (n % 64))
		alphas := [2]byte{0, 255}
		p := []byte{byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), alphas[n&1]}
		q := []byte{byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), alphas[n>>1&1]}
		for _, yOnly := range []bool{false, true} {
			got, want := checkerDeltaOpaqueOrClear(p, q, bg, yOnly), checkerDelta(p, q, bg, yOnly)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%v vs %v over %v (yOnly %v): %v in integers, %v in floating point", p, q, bg, yOnly, got, want)
			}
		}
	}
}

// TestBelowMatchesDelta checks the comparer's threshold test, its integer
// bounds and its memos (translucent pairs, OKLab colours), against the
// distance computed afresh, YIQ over white and over the checkerboard and
// OKLab: pairs from a small palette (so the memos are hit, at pixels of
// other checkerboard colours too) at random pixels.
func TestBelowMatchesDelta(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 18))
	var palette [][]byte
	for range 12 {
		alphas := []byte{0, 128, 200, 255, 255}
		palette = append(palette, []byte{byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), alphas[rng.IntN(len(alphas))]})
	}
	const w, h = 64, 64
	for _, o := range []Options{{}, {Checkerboard: true}, {ColorMetric: MetricOKLab}} {
		checker := o.Checkerboard
		img := raster{pix: make([]byte, 4*w*h), stride: 4 * w, w: w, h: h}
		c := newComparer(img, img, o)
		for range 200_000 {
			p, q := palette[rng.IntN(len(palette))], palette[rng.IntN(len(palette))]
			pa, pb := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(q)
			if pa == pb {
				continue
			}
			x, y := rng.IntN(w), rng.IntN(h)
			bg := bgWhite
			if checker {
				bg = checkerAt(4 * (y*w + x))
			}
			want := math.Abs(colorDeltaBlended(p, q, bg, false)) <= c.maxDelta
			if c.okLab {
				want = okLabDelta(p, q, 0, 0) <= c.maxDelta
			}
			if got := c.below(pa, pb, p, q, x, y); got != want {
				t.Fatalf("%v vs %v at (%d, %d), %+v: below %v, pixelmatch %v", p, q, x, y, o, got, want)
			}
		}
	}
}

// floatExtremes is translucentExtremes in pixelmatch's floating point
// (antialiasedTranslucentFloat's loop): -1, -1 when more than two
// neighbours are as bright as the centre or none is darker or brighter.
func floatExtremes(img *raster, x1, y1 int, bg *background) (lo, hi int) {
	pos := y1*img.stride + 4*x1
	p := img.pix[pos : pos+4]
	var dlo, dhi float64
	lo, hi = -1, -1
	zeroes := 0
	for k := range 8 {
		m := pos + neighbourDY[k]*img.stride + 4*neighbourDX[k]
		switch d := lumaOf(p, img.pix[m:m+4:m+4], bg); {
		case d == 0:
			zeroes++
		case d < dlo:
			dlo, lo = d, k
		case d > dhi:
			dhi, hi = d, k
		}
	}
	if zeroes > 2 || lo < 0 || hi < 0 {
		return -1, -1
	}
	return lo, hi
}

// TestTranslucentExtremesExact checks the integer darkest and brightest
// neighbours of translucent neighbourhoods against pixelmatch's floating
// point, over white and every checkerboard colour: 3×3 neighbourhoods from
// small palettes with alphas 0, 1, 128, 254, 255 and random ones (ties and
// zeros of the integer form come often, and must fall back), and fully
// random ones.
func TestTranslucentExtremesExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 32))
	bgs := checkerColours()
	img := raster{pix: make([]byte, 36), stride: 12, w: 3, h: 3}
	decided, aa := 0, 0
	for n := range 2_000_000 {
		randomNeighbourhood(rng, &img, n)
		bg := &bgs[n%len(bgs)]
		lo, hi, ok := translucentExtremesAt(&img, 1, 1, bg)
		if !ok {
			continue
		}
		decided++
		if wlo, whi := floatExtremes(&img, 1, 1, bg); lo != wlo || hi != whi {
			t.Fatalf("%x over %+v: integers %d, %d; floating point %d, %d", img.pix, *bg, lo, hi, wlo, whi)
		}
		if lo >= 0 {
			aa++
		}
	}
	if decided < 1_000_000 || aa < 100_000 {
		t.Fatalf("%d decided, %d with both extremes: the cases exercise too little", decided, aa)
	}
}

// TestTranslucentBoundExact checks translucentBound's verdicts on pairs
// with a translucent pixel against pixelmatch's floating point, over white
// and every checkerboard colour a pixel can have, at thresholds from 0 to
// 1: random pairs, pairs a few levels apart and pairs of one colour at
// other alphas (the bounds' edges and X = 0).
func TestTranslucentBoundExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(33, 34))
	decided := 0
	for _, th := range []float64{-1, 1e-9, 0.001, 0.05, 0.1, 0.2, 0.5, 1} {
		for _, checker := range []bool{false, true} {
			img := raster{pix: make([]byte, 4), stride: 4, w: 1, h: 1}
			c := newComparer(img, img, Options{Threshold: th, Checkerboard: checker})
			for n := range 300_000 {
				pa := rng.Uint32()
				pb := pa ^ rng.Uint32()&0x070707
				switch n % 3 {
				case 0:
					pb = rng.Uint32()
				case 1:
					pb = pa&0xffffff | rng.Uint32()<<24
				}
				if n%5 == 0 {
					pa |= 0xff000000
				}
				if pa&pb>>24 == 0xff || pa == pb {
					continue
				}
				below, ok := c.translucentBound(pa, pb)
				if !ok {
					continue
				}
				decided++
				p, q := binary.LittleEndian.AppendUint32(nil, pa), binary.LittleEndian.AppendUint32(nil, pb)
				bgs := []background{bgWhite}
				if checker {
					bgs = bgs[:0]
					for _, g := range []float64{48, 207} {
						for _, b := range []float64{48, 207} {
							bgs = append(bgs, background{checker: true, r: 48, g: g, b: b})
						}
					}
				}
				for _, bg := range bgs {
					if want := math.Abs(colorDeltaBlended(p, q, bg, false)) <= c.maxDelta; below != want {
						t.Fatalf("%08x vs %08x over %+v, threshold %v: bound says below %v, pixelmatch %v", pa, pb, bg, th, below, want)
					}
				}
			}
		}
	}
	if decided < 1_000_000 {
		t.Fatalf("only %d pairs decided by the bounds", decided)
	}
}
