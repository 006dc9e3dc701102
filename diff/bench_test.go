package diff

import (
	"fmt"
	"image"
	"math/rand/v2"
	"testing"
)

// pagePair makes an opaque page-like w×h RGBA image (white, with rows of
// dark "glyph" noise) and a copy whose text changes in a band holding about
// 2% of the pixels.
func pagePair(w, h int) (*image.RGBA, *image.RGBA) {
	rng := rand.New(rand.NewPCG(7, 7))
	a := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range a.Pix {
		a.Pix[i] = 255
	}
	ink := func(img *image.RGBA, y0, y1 int) {
		for y := y0; y < y1; y++ {
			if y%24 >= 16 { // line spacing
				continue
			}
			row := img.Pix[y*img.Stride : y*img.Stride+4*w]
			for x := 40; x < w-40; x++ {
				if rng.IntN(3) == 0 {
					v := byte(rng.IntN(200))
					row[4*x], row[4*x+1], row[4*x+2] = v, v, v
				}
			}
		}
	}
	ink(a, 0, h)
	b := image.NewRGBA(a.Rect)
	copy(b.Pix, a.Pix)
	band := max(1, h/50)
	ink(b, h/2, h/2+band)
	return a, b
}

func benchmarkCompare(b *testing.B, w, h int) {
	x, y := pagePair(w, h)
	o := DefaultOptions()
	b.SetBytes(int64(4 * w * h))
	b.ResetTimer()
	var r *Result
	for b.Loop() {
		var err error
		if r, err = Compare(x, y, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w*h)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MP/s")
	b.ReportMetric(float64(r.DiffPixels), "diffpx")
}

func BenchmarkCompare1280x720(b *testing.B)   { benchmarkCompare(b, 1280, 720) }
func BenchmarkCompare1280x20000(b *testing.B) { benchmarkCompare(b, 1280, 20000) }

// ExampleCompare shows the visual-regression gate.
func ExampleCompare() {
	baseline, _ := pagePair(64, 48)
	current := image.NewRGBA(baseline.Rect)
	copy(current.Pix, baseline.Pix)
	current.Pix[0] = 0 // one pixel of the first row turns red-less (cyan)

	r, err := Compare(baseline, current, DefaultOptions())
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d of %d pixels differ, at %v; passes 0.1%%: %v\n", r.DiffPixels, r.Width*r.Height, r.Bounds, Passes(r, 0.001))
	// Output: 1 of 3072 pixels differ, at (0,0)-(1,1); passes 0.1%: true
}
