package main

import (
	"encoding/binary"
	"fmt"
	"image"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/snapq/snapq/diff"
)

// diffSizes are the screenshot sizes of the diff bench: one viewport and
// one tall page.
var diffSizes = []image.Point{{1280, 720}, {1280, 20000}}

// diffBench measures diff.Compare (pixelmatch with anti-aliasing detection
// and the diff image, as visual regression runs it) against a naive
// comparison in the same run, interleaved, best of runs each:
//
//   - naive: a loop over image.At(x, y).RGBA() of both images counting the
//     pixels whose RGBA differs (the floor the issue names);
//   - pix:   a loop over the Pix bytes counting unequal 32-bit pixels, the
//     memory-speed bound of any exact comparison (for context).
//
// Images are synthetic page-like RGBA screenshots (text lines, a header,
// pictures) whose second version changes about 2% of the pixels' area.
func diffBench() error {
	for _, sz := range diffSizes {
		a, b := pageImages(sz.X, sz.Y)
		runs := 7
		if sz.X*sz.Y > 4_000_000 {
			runs = 3
		}
		var best struct{ diff, naive, pix time.Duration }
		var res *diff.Result
		var naiveN, pixN int
		for r := range runs {
			steps := []func() error{
				func() error {
					d, n := timed(func() int { return naiveDiff(a, b) })
					best.naive, naiveN = minDur(best.naive, d), n
					return nil
				},
				func() error {
					start := time.Now()
					out, err := diff.Compare(a, b, diff.DefaultOptions())
					best.diff = minDur(best.diff, time.Since(start))
					res.Release() // as the regression comparer does once a diff image is encoded
					res = out
					return err
				},
				func() error {
					d, n := timed(func() int { return pixDiff(a, b) })
					best.pix, pixN = minDur(best.pix, d), n
					return nil
				},
			}
			if r%2 == 1 { // alternate the order so neither side always runs warm
				steps[0], steps[1] = steps[1], steps[0]
			}
			for _, s := range steps {
				if err := s(); err != nil {
					return fmt.Errorf("diff %dx%d: %w", sz.X, sz.Y, err)
				}
			}
		}
		if naiveN != pixN {
			return fmt.Errorf("diff %dx%d: naive counted %d changed pixels, pix loop %d", sz.X, sz.Y, naiveN, pixN)
		}
		mp := float64(sz.X*sz.Y) / 1e6
		fmt.Printf("bench: diff %dx%d: %.1f MP/s, naive %.1f MP/s, diff/naive = %.2f\n",
			sz.X, sz.Y, mp/best.diff.Seconds(), mp/best.naive.Seconds(), best.naive.Seconds()/best.diff.Seconds())
		fmt.Printf("bench: diff %dx%d: %d px changed exactly, %d differ (%.2f%%) and %d anti-aliased at threshold 0.1; pix-byte loop %.1f MP/s; best of %d\n",
			sz.X, sz.Y, naiveN, res.DiffPixels, 100*res.Ratio, res.AAPixels, mp/best.pix.Seconds(), runs)
	}
	if err := pixelmatchBench(); err != nil {
		return err
	}
	if err := alignedBench(); err != nil {
		return err
	}
	debug.FreeOSMemory() // give the images back before the e2e part
	return nil
}

func timed(f func() int) (time.Duration, int) {
	start := time.Now()
	n := f()
	return time.Since(start), n
}

func minDur(best, d time.Duration) time.Duration {
	if best == 0 || d < best {
		return d
	}
	return best
}

// naiveDiff counts the pixels whose RGBA differs, through image.At.
func naiveDiff(a, b image.Image) int {
	n := 0
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				n++
			}
		}
	}
	return n
}

// pixDiff counts unequal 32-bit pixels of two same-size RGBA images.
func pixDiff(a, b *image.RGBA) int {
	n := 0
	for i := 0; i+4 <= len(a.Pix); i += 4 {
		if binary.LittleEndian.Uint32(a.Pix[i:]) != binary.LittleEndian.Uint32(b.Pix[i:]) {
			n++
		}
	}
	return n
}

// pageImages draws an opaque page-like screenshot (a coloured header, lines
// of anti-aliased "glyphs", gradient pictures) and a second version with
// about 2% of its area changed: text re-set in pieces of lines.
func pageImages(w, h int) (*image.RGBA, *image.RGBA) {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	a := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range a.Pix {
		a.Pix[i] = 255
	}
	fillRect(a, image.Rect(0, 0, w, 64), [3]byte{30, 60, 140})
	for line := 0; 96+24*(line+1) <= h; line++ {
		y := 96 + 24*line
		if line%50 == 0 && y+24*12 <= h { // a picture every 50 lines
			gradient(a, image.Rect(160, y, 160+480, y+24*12))
			line += 11
			continue
		}
		textLine(a, rng, y, 80, w-80)
	}
	b := image.NewRGBA(a.Rect)
	copy(b.Pix, a.Pix)
	// Changes: about 2% of the area, in line pieces spread over the page.
	for i, left := 0, w*h/50; left > 0; i++ {
		y := 96 + (i*997+h/3)%max(1, h-200)
		y -= (y - 96) % 24
		pw := min(560, w-160, (left+23)/24)
		clearRect(b, image.Rect(80, y, 80+pw, y+24))
		textLine(b, rng, y, 80, 80+pw)
		left -= pw * 24
	}
	return a, b
}

// textLine draws a line of 16 px high "words" of anti-aliased strokes.
func textLine(img *image.RGBA, rng *rand.Rand, y, x0, x1 int) {
	for x := x0; x < x1; {
		word := 20 + rng.IntN(70)
		for gx := x; gx < min(x+word, x1); gx++ {
			top, bottom := 3+rng.IntN(4), 12+rng.IntN(3)
			ink := byte(rng.IntN(60))
			for gy := y + top; gy < y+bottom; gy++ {
				if rng.IntN(3) > 0 {
					setGray(img, gx, gy, ink)
				} else {
					setGray(img, gx, gy, 120+byte(rng.IntN(120))) // anti-aliased edge
				}
			}
		}
		x += word + 8
	}
}

func setGray(img *image.RGBA, x, y int, v byte) {
	i := img.PixOffset(x, y)
	img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = v, v, v, 255
}

func fillRect(img *image.RGBA, r image.Rectangle, c [3]byte) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c[0], c[1], c[2], 255
		}
	}
}

func clearRect(img *image.RGBA, r image.Rectangle) { fillRect(img, r, [3]byte{255, 255, 255}) }

// gradient draws a smooth colour picture in r.
func gradient(img *image.RGBA, r image.Rectangle) {
	r = r.Intersect(img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			dx, dy := x-r.Min.X, y-r.Min.Y
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(dx/2), byte(dy), byte((dx+dy)/4), 255
		}
	}
}
