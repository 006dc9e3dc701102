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
// mismatch counts (its test/test.js) on its own fixtures, with the same
// options: threshold 0.05 unless the test says otherwise, anti-aliasing
// detected, and semi-transparent pixels over pixelmatch 7's checkerboard
// (only 5a, 5b are translucent; over white, snapq's default, they count
// 0, as pixelmatch 6 did). 2diff's alpha and colours and 7diff's
// diffColorAlt change only its diff image.
func TestPixelmatchFixtureCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		a, b      string
		threshold float64
		want      int
		wantWhite int // with Options.Checkerboard unset
	}{
		{"1diff", "1a", "1b", 0.05, 143, 143},
		{"1diffdefaultthreshold", "1a", "1b", 0, 106, 106},
		{"1emptydiffmask", "1a", "1a", ExactThreshold, 0, 0},
		{"2diff", "2a", "2b", 0.05, 12437, 12437},
		{"3diff", "3a", "3b", 0.05, 212, 212},
		{"4diff", "4a", "4b", 0.05, 36049, 36049},
		{"5diff", "5a", "5b", 0.05, 6, 0},
		{"6diff", "6a", "6b", 0.05, 51, 51},
		{"6empty", "6a", "6a", ExactThreshold, 0, 0},
		{"7diff", "7a", "7b", 0, 2448, 2448},
		{"8diff", "8a", "5b", 0.05, 32896, 0},
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
				}
			}
		})
	}
}
