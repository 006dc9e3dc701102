package diff

import (
	"image"
	"os"
	"path/filepath"
	"testing"
)

// fixture decodes one of pixelmatch's test images (testdata/pixelmatch,
// ISC; see its README.md) as image/png does: NRGBA, RGBA or Paletted.
func fixture(tb testing.TB, name string) image.Image {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pixelmatch", name+".png"))
	if err != nil {
		tb.Fatal(err)
	}
	img, err := DecodePNG(data)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// BenchmarkPixelmatchFixtures times Compare with a diff image on
// pixelmatch's fixture pairs with its default options (threshold 0.1,
// checkerboard).
func BenchmarkPixelmatchFixtures(b *testing.B) {
	o := DefaultOptions()
	o.Checkerboard = true
	for _, p := range [][2]string{{"1a", "1b"}, {"2a", "2b"}, {"3a", "3b"}, {"4a", "4b"}, {"5a", "5b"}, {"6a", "6b"}, {"7a", "7b"}, {"8a", "5b"}} {
		x, y := fixture(b, p[0]), fixture(b, p[1])
		b.Run(p[0]+p[1], func(b *testing.B) {
			for b.Loop() {
				if _, err := Compare(x, y, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPixelmatchFixtureCounts asserts pixelmatch 7.1.0's published
// mismatch counts (its test/test.js, every diffTest case) on its own
// fixtures, with the same options: threshold 0.05 unless the case says
// otherwise, anti-aliasing detected (1diffmask says includeAA: false
// explicitly), and semi-transparent pixels over pixelmatch 7's checkerboard
// (only 5a, 5b and 8a are translucent; over white, snapq's default, 5a/5b
// count 0, as pixelmatch 6 did, and 8a/5b count 0). The options that change
// only pixelmatch's diff image (2diff's alpha, aaColor and diffColor, 7diff's
// diffColorAlt, diffMask) leave its counts alone, as the test file asserts
// (the same count with and without an output). Where the case draws the
// diff image with pixelmatch's defaults (alpha 0.1, yellow and red, no
// mask), snapq's diff image must be pixelmatch's expected one byte for byte
// (test/fixtures/<case>.png, copied unchanged).
func TestPixelmatchFixtureCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		a, b      string
		threshold float64
		want      int
		wantWhite int  // with Options.Checkerboard unset
		image     bool // the case's expected diff image is testdata/pixelmatch/<name>.png
	}{
		{"1diff", "1a", "1b", 0.05, 143, 143, true},
		{"1diffdefaultthreshold", "1a", "1b", 0, 106, 106, true},
		{"1diffmask", "1a", "1b", 0.05, 143, 143, false},
		{"1emptydiffmask", "1a", "1a", ExactThreshold, 0, 0, false},
		{"2diff", "2a", "2b", 0.05, 12437, 12437, false},
		{"3diff", "3a", "3b", 0.05, 212, 212, true},
		{"4diff", "4a", "4b", 0.05, 36049, 36049, true},
		{"5diff", "5a", "5b", 0.05, 6, 0, true},
		{"6diff", "6a", "6b", 0.05, 51, 51, true},
		{"6empty", "6a", "6a", ExactThreshold, 0, 0, true},
		{"7diff", "7a", "7b", 0, 2448, 2448, false},
		{"8diff", "8a", "5b", 0.05, 32896, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := fixture(t, tt.a), fixture(t, tt.b)
			for _, checker := range []bool{true, false} {
				want := tt.want
				if !checker {
					want = tt.wantWhite
				}
				for _, withImage := range []bool{true, false} {
					o := Options{Threshold: tt.threshold, Checkerboard: checker, DiffImage: withImage}
					r := mustCompare(t, a, b, o)
					if r.DiffPixels != want {
						t.Errorf("%s/%s checkerboard %v diff image %v: %d pixels differ, pixelmatch says %d",
							tt.a, tt.b, checker, withImage, r.DiffPixels, want)
					}
					if tt.image && checker && withImage {
						sameDiffImage(t, r.Diff, fixture(t, tt.name))
					}
				}
			}
		})
	}
}

// sameDiffImage fails unless got's pixels are want's (pngjs writes 8-bit
// RGBA PNGs, which image/png decodes as NRGBA), naming the first pixel
// that differs and how many do.
func sameDiffImage(t *testing.T, got *image.NRGBA, want image.Image) {
	t.Helper()
	w, ok := want.(*image.NRGBA)
	if !ok || got == nil || w.Rect != got.Rect {
		t.Fatalf("expected diff image %T %v, snapq's %v", want, want.Bounds(), got.Rect)
	}
	first, n := -1, 0
	for i := 0; i < len(w.Pix); i += 4 {
		if string(w.Pix[i:i+4]) != string(got.Pix[i:i+4]) {
			if first < 0 {
				first = i / 4
			}
			n++
		}
	}
	if n > 0 {
		x, y := first%w.Rect.Dx(), first/w.Rect.Dx()
		t.Errorf("%d pixels of the diff image differ from pixelmatch's; first (%d, %d): snapq %v, pixelmatch %v",
			n, x, y, got.Pix[4*first:4*first+4], w.Pix[4*first:4*first+4])
	}
}
