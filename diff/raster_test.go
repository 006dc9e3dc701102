package diff

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"math/rand/v2"
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

// TestPooledRastersMatchDirect compares paletted and gray images (whose
// converted pixels come from pixPool and go back to it after each
// comparison) with the same images as NRGBA, many times over, sizes
// changing (beside the other parallel tests): a buffer reused too early
// would change a count.
func TestPooledRastersMatchDirect(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 20))
	for i := range 40 {
		w, h := 1+rng.IntN(60), 1+rng.IntN(60)
		a, b := noisyPair(rng, w, h)
		for k := 3; k < len(a.Pix); k += 4 {
			a.Pix[k], b.Pix[k] = 255, 255
		}
		var pa, pb image.Image
		if i%2 == 0 {
			pa, pb = toPaletted(a), toPaletted(b)
		} else {
			pa, pb = toGray(a), toGray(b)
		}
		na, nb := toNRGBAImage(pa), toNRGBAImage(pb)
		for range 3 {
			got, err := Compare(pa, pb, Options{DiffImage: true})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := Compare(na, nb, Options{DiffImage: true})
			if got.DiffPixels != want.DiffPixels || got.AAPixels != want.AAPixels || !bytes.Equal(got.Diff.Pix, want.Diff.Pix) {
				t.Fatalf("%T %dx%d: %d differ, %d AA; as NRGBA %d, %d", pa, w, h, got.DiffPixels, got.AAPixels, want.DiffPixels, want.AAPixels)
			}
		}
	}
}

// toPaletted is m through a palette of its colours (at most 256).
func toPaletted(m *image.NRGBA) *image.Paletted {
	var pal color.Palette
	idx := map[color.NRGBA]uint8{}
	p := image.NewPaletted(m.Rect, nil)
	for y := range m.Rect.Dy() {
		for x := range m.Rect.Dx() {
			c := m.NRGBAAt(x, y)
			k, ok := idx[c]
			if !ok {
				k = uint8(len(pal))
				idx[c] = k
				pal = append(pal, c)
			}
			p.SetColorIndex(x, y, k)
		}
	}
	p.Palette = pal
	return p
}

// toGray is m's green channel as a gray image.
func toGray(m *image.NRGBA) *image.Gray {
	g := image.NewGray(m.Rect)
	for i := range g.Pix {
		g.Pix[i] = m.Pix[4*i+1]
	}
	return g
}

// toNRGBAImage converts any image to NRGBA.
func toNRGBAImage(m image.Image) *image.NRGBA {
	n := image.NewNRGBA(m.Bounds())
	draw.Draw(n, n.Rect, m, m.Bounds().Min, draw.Src)
	return n
}
