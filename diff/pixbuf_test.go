package diff

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

// withFill runs f with the bytes of every new diff image first set to v
// (pixFill). Not parallel: pixFill is package state.
func withFill(v byte, f func()) {
	pixFill = func(b []byte) {
		for i := range b {
			b[i] = v
		}
	}
	defer func() { pixFill = nil }()
	f()
}

// translucentRGBA is an *image.RGBA (Compare checks its opacity row by
// row, lazily) with one translucent pixel near the bottom: the comparison
// starts over on converted rasters, with a new diff image.
func translucentRGBA(w, h int) *image.RGBA {
	a, _ := pagePair(w, h)
	a.SetRGBA(w/2, h-3, color.RGBA{40, 40, 40, 128})
	return a
}

// TestDiffImageWritesEveryByte: the diff image's bytes are not zeroed
// (newDiffImage), so Compare must write every one of them. Each case runs
// twice, the new image's bytes set first to 0x00 and then to 0xff: a byte
// left unwritten would differ. The cases cover every way a pixel is drawn
// (faded equal rows, copied rows, compared rows, anti-aliasing, outside one
// image, masks inside and outside the overlap), the cropped image, the
// restart on translucent rows, the row-parallel run of a tall page, a diff
// image large enough for the huge-page advice, OKLab and the checkerboard.
func TestDiffImageWritesEveryByte(t *testing.T) {
	tallA, tallB := pagePair(200, 3000)
	bigA, bigB := pagePair(1280, 1000)
	mask := []image.Rectangle{image.Rect(10, 5, 60, 40), image.Rect(150, 2990, 260, 3100)}
	cases := []struct {
		name string
		a, b image.Image
		o    Options
	}{
		{"pixelmatch 1a/1b", fixture(t, "1a"), fixture(t, "1b"), Options{DiffImage: true, Checkerboard: true}},
		{"pixelmatch 6a/6b", fixture(t, "6a"), fixture(t, "6b"), Options{DiffImage: true, Checkerboard: true}},
		{"pixelmatch 8a/5b", fixture(t, "8a"), fixture(t, "5b"), Options{DiffImage: true}},
		{"tall page", tallA, tallB, Options{DiffImage: true}},
		{"tall page masked", tallA, tallB, Options{DiffImage: true, Mask: mask}},
		{"tall page cropped", tallA, tallB, Options{DiffImage: true, DiffCrop: 20, Mask: mask}},
		{"tall page OKLab, anti-aliasing counted", tallA, tallB, Options{DiffImage: true, ColorMetric: MetricOKLab, IncludeAA: true}},
		{"sizes differ, masked outside the overlap", tallA, bigB.SubImage(image.Rect(0, 0, 260, 900)), Options{DiffImage: true, Mask: mask}},
		{"translucent RGBA", translucentRGBA(200, 300), tallB.SubImage(image.Rect(0, 0, 200, 300)), Options{DiffImage: true}},
		{"huge-page sized", bigA, bigB, Options{DiffImage: true}},
	}
	for _, tc := range cases {
		// The first image is released before the second is drawn, which
		// then most often reuses its buffer (pixPool): fresh and recycled
		// buffers are both checked.
		var zero, ones *Result
		withFill(0x00, func() { zero = mustCompare(t, tc.a, tc.b, tc.o) })
		want, rect, counts := bytes.Clone(zero.Diff.Pix), zero.Diff.Rect, [2]int{zero.DiffPixels, zero.AAPixels}
		zero.Release()
		withFill(0xff, func() { ones = mustCompare(t, tc.a, tc.b, tc.o) })
		if ones.Diff == nil || ones.Diff.Rect != rect {
			t.Fatalf("%s: diff images %v and %v", tc.name, rect, ones.Diff)
		}
		if i := firstDifference(want, ones.Diff.Pix); i >= 0 {
			t.Errorf("%s: byte %d of the diff image (pixel %d, %d) is left unwritten", tc.name, i,
				rect.Min.X+i%ones.Diff.Stride/4, rect.Min.Y+i/ones.Diff.Stride)
		}
		if counts != [2]int{ones.DiffPixels, ones.AAPixels} {
			t.Errorf("%s: counts differ: %v, %+v", tc.name, counts, ones)
		}
		ones.Release()
	}
}

// TestReleaseRecyclesDiffImage: Release clears Diff and hands its memory to
// the next comparison of that size or smaller (sync.Pool may drop it, so a
// few tries), whose diff image is then exactly a fresh one's; a second
// Release, a nil Result, a result without a diff image and one whose image
// Compare did not draw are left alone.
func TestReleaseRecyclesDiffImage(t *testing.T) {
	a, b := pagePair(300, 200)
	o := Options{DiffImage: true}
	want := mustCompare(t, a, b, o)
	reused := false
	for range 20 {
		r := mustCompare(t, a, b, o)
		first := &r.Diff.Pix[0]
		r.Release()
		if r.Diff != nil {
			t.Fatal("Release left Diff set")
		}
		r.Release()
		small, _ := pagePair(100, 50)
		s := mustCompare(t, small, small, o)
		reused = reused || &s.Diff.Pix[0] == first
		if !bytes.Equal(s.Diff.Pix, mustCompare(t, small, small, o).Diff.Pix) {
			t.Fatal("a recycled diff image differs from a fresh one")
		}
		s.Release()
		if again := mustCompare(t, a, b, o); !bytes.Equal(again.Diff.Pix, want.Diff.Pix) {
			t.Fatal("the diff image drawn after Release differs")
		}
	}
	if !reused {
		t.Error("no comparison reused a released diff image in 20 tries")
	}
	var nilResult *Result
	nilResult.Release()
	mustCompare(t, a, b, Options{}).Release()
	own := &Result{Diff: image.NewNRGBA(image.Rect(0, 0, 4, 4))}
	own.Release()
	if own.Diff != nil {
		t.Fatal("Release left a foreign Diff set")
	}
}

// firstDifference is the index of the first byte where a and b differ, -1
// when they are equal.
func firstDifference(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// TestUninitialized: the buffer has the length asked for, a capacity no
// larger, and is writable to its end (the huge-page advice and the
// builder's capacity); the empty one is empty.
func TestUninitialized(t *testing.T) {
	for _, n := range []int{0, 1, 7, 4096, 2<<20 + 5, 3 << 20, 4<<20 + 3, 9 << 20} {
		b := uninitialized(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("uninitialized(%d): len %d, cap %d", n, len(b), cap(b))
		}
		for i := range b {
			b[i] = byte(i)
		}
		if n > 0 && b[n-1] != byte(n-1) {
			t.Fatalf("uninitialized(%d): last byte not kept", n)
		}
	}
}

// TestRowAfterDifferenceIsFaded: a row equal to the row above in the first
// image copies the faded row above only when that row was equal in both
// images (compareOverlap); after a row that differs at any pixel (the odd
// last one too, opaque or translucent rows) the next row is faded, not
// copied with the marks above it.
func TestRowAfterDifferenceIsFaded(t *testing.T) {
	t.Parallel()
	for _, w := range []int{4, 5} {
		for _, bg := range []color.NRGBA{white, {200, 220, 240, 128}} {
			for x := range w {
				a := filled(w, 3, bg)
				b := filled(w, 3, bg)
				b.SetNRGBA(x, 0, black)
				r := mustCompare(t, a, b, Options{DiffImage: true, Checkerboard: true})
				for y := 1; y < 3; y++ {
					for xx := range w {
						if Marks(r.Diff, xx, y) {
							t.Errorf("width %d, background %v, difference at x=%d: pixel (%d, %d) marked", w, bg, x, xx, y)
						}
					}
				}
				if !Marks(r.Diff, x, 0) {
					t.Errorf("width %d, background %v: difference at x=%d not marked", w, bg, x)
				}
			}
		}
	}
}

// TestEqualRowsFadeEveryPixel: rows equal in both images are faded four
// pixels a step (fadeEqualQuads), copied from the row above or handed to
// compareFadeSpan at a translucent pixel; every pixel of the diff image of
// an image compared with itself must be fadedColor's gray of its pixel, at
// every width (steps of four and the pixels left over), with runs of one
// colour (the memo) and translucent pixels in some rows.
func TestEqualRowsFadeEveryPixel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 6))
	for w := 1; w <= 37; w++ {
		a := image.NewNRGBA(image.Rect(0, 0, w, 12))
		for y := range 12 {
			if y%4 == 3 { // a row equal to the one above
				copy(a.Pix[y*a.Stride:(y+1)*a.Stride], a.Pix[(y-1)*a.Stride:y*a.Stride])
				continue
			}
			var p color.NRGBA
			for x := range w {
				if x == 0 || rng.IntN(3) == 0 { // else a run of the last colour
					p = color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
					if y%4 == 2 && rng.IntN(4) == 0 {
						p.A = uint8(rng.IntN(256))
					}
				}
				a.SetNRGBA(x, y, p)
			}
		}
		b := image.NewNRGBA(a.Rect)
		copy(b.Pix, a.Pix)
		r := mustCompare(t, a, b, Options{DiffImage: true})
		for y := range 12 {
			for x := range w {
				i := a.PixOffset(x, y)
				want := fadedColor(uint32(a.Pix[i]) | uint32(a.Pix[i+1])<<8 | uint32(a.Pix[i+2])<<16 | uint32(a.Pix[i+3])<<24)
				if got := binary.LittleEndian.Uint32(r.Diff.Pix[i:]); got != want {
					t.Fatalf("width %d, pixel (%d, %d) %v: diff image %08x, want %08x", w, x, y, a.NRGBAAt(x, y), got, want)
				}
			}
		}
	}
}
