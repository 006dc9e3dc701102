package diff

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"testing"
)

// An image.RGBA is compared without an opacity scan up front; one with a
// translucent row (premultiplied bytes that are not straight alpha) found
// mid-way gives the result of its straight-alpha copy, diff image included.
func TestCompareTranslucentRGBA(t *testing.T) {
	t.Parallel()
	a := image.NewRGBA(image.Rect(0, 0, 40, 60))
	draw.Draw(a, a.Rect, image.NewUniform(color.RGBA{200, 180, 160, 255}), image.Point{}, draw.Src)
	b := image.NewRGBA(a.Rect)
	copy(b.Pix, a.Pix)
	draw.Draw(b, image.Rect(5, 10, 15, 12), image.NewUniform(color.RGBA{0, 0, 0, 255}), image.Point{}, draw.Src)
	for _, img := range []*image.RGBA{a, b} { // a translucent band below the change, in both
		draw.Draw(img, image.Rect(0, 40, 40, 45), image.NewUniform(color.RGBA{60, 20, 10, 100}), image.Point{}, draw.Src)
	}
	b.Pix[b.PixOffset(30, 42)] = 20 // and a difference in it
	toN := func(m *image.RGBA) *image.NRGBA {
		n := image.NewNRGBA(m.Rect)
		draw.Draw(n, n.Rect, m, image.Point{}, draw.Src)
		return n
	}
	for _, o := range []Options{{DiffImage: true}, {DiffImage: true, DiffCrop: 4}, {}} {
		got := mustCompare(t, a, b, o)
		want := mustCompare(t, toN(a), toN(b), o)
		if got.DiffPixels != want.DiffPixels || got.AAPixels != want.AAPixels || got.Bounds != want.Bounds ||
			(o.DiffImage && (got.Diff.Rect != want.Diff.Rect || !bytes.Equal(got.Diff.Pix, want.Diff.Pix))) {
			t.Fatalf("%+v: RGBA %+v, its NRGBA copy %+v", o, got, want)
		}
		if got.DiffPixels < 2 {
			t.Fatalf("%+v: %d px differ, want both changes", o, got.DiffPixels)
		}
	}
}
