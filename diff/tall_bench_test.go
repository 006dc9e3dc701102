package diff

import (
	"image"
	"image/draw"
	"testing"
)

// A tall page with one small change: equal rows are skipped and, with the
// diff image, only faded.
func BenchmarkCompareTallOneChange(b *testing.B) {
	x, _ := pagePair(1280, 20000)
	y := image.NewRGBA(x.Rect)
	copy(y.Pix, x.Pix)
	draw.Draw(y, image.Rect(400, 12004, 520, 12016), image.NewUniform(white), image.Point{}, draw.Src)
	for _, withImage := range []bool{false, true} {
		name := "counts"
		if withImage {
			name = "diff-image"
		}
		b.Run(name, func(b *testing.B) {
			o := Options{DiffImage: withImage}
			for b.Loop() {
				if _, err := Compare(x, y, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A cropped diff image is byte for byte the band of the full one, and the
// counts do not change.
func TestDiffCrop(t *testing.T) {
	t.Parallel()
	x, y := pagePair(200, 3000)
	full := mustCompare(t, x, y, Options{DiffImage: true, Mask: []image.Rectangle{image.Rect(0, 1500, 50, 1520)}})
	crop := mustCompare(t, x, y, Options{DiffImage: true, DiffCrop: 16, Mask: []image.Rectangle{image.Rect(0, 1500, 50, 1520)}})
	if full.DiffPixels != crop.DiffPixels || full.AAPixels != crop.AAPixels || full.MaskedPixels != crop.MaskedPixels || full.Bounds != crop.Bounds {
		t.Fatalf("counts differ: full %+v, cropped %+v", full, crop)
	}
	want := image.Rect(0, full.Bounds.Min.Y-16, 200, full.Bounds.Max.Y+16)
	if crop.Diff.Rect != want {
		t.Fatalf("cropped diff image %v, want %v", crop.Diff.Rect, want)
	}
	for yy := want.Min.Y; yy < want.Max.Y; yy++ {
		a := full.Diff.Pix[full.Diff.PixOffset(0, yy):][:4*200]
		b := crop.Diff.Pix[crop.Diff.PixOffset(0, yy):][:4*200]
		if string(a) != string(b) {
			t.Fatalf("row %d differs from the full diff image", yy)
		}
	}
	same := mustCompare(t, x, x, Options{DiffImage: true, DiffCrop: 16})
	if !same.Diff.Rect.Empty() {
		t.Fatalf("no difference: diff image %v, want empty", same.Diff.Rect)
	}
}
