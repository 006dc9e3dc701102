package thumbnail_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"testing"

	"github.com/snapq/snapq/thumbnail"
)

// boxMean is the preview a Scaler must make, computed pixel by pixel: each
// preview pixel the rounded mean of the premultiplied source pixels mapping to
// it (column x*tw/w, row y*th/rows).
func boxMean(pix []byte, w, h, bpp int) *image.RGBA {
	tw, th, rows := thumbnail.Geometry(w, h)
	out := image.NewRGBA(image.Rect(0, 0, tw, th))
	for ty := range th {
		for tx := range tw {
			var sum [3]uint64
			var n uint64
			for y := range rows {
				if y*th/rows != ty {
					continue
				}
				for x := range w {
					if x*tw/w != tx {
						continue
					}
					p := pix[(y*w+x)*bpp:]
					a := uint64(255)
					if bpp == 4 {
						a = uint64(p[3])
					}
					for c := range 3 {
						sum[c] += a * uint64(p[c])
					}
					n++
				}
			}
			for c := range 3 {
				out.Pix[ty*out.Stride+4*tx+c] = byte((sum[c] + 255*n/2) / (255 * n))
			}
			out.Pix[ty*out.Stride+4*tx+3] = 255
		}
	}
	return out
}

func TestScalerMatchesBoxMean(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sz := range []struct{ w, h int }{{1280, 720}, {1283, 731}, {200, 100}, {7, 3}, {1280, 3000}, {641, 1}, {1, 900}} {
		for _, bpp := range []int{3, 4} {
			pix := make([]byte, sz.w*sz.h*bpp)
			for i := range pix {
				pix[i] = byte(rng.IntN(256))
			}
			s := thumbnail.NewScaler(sz.w, sz.h)
			for y := range sz.h {
				s.Row(y, pix[y*sz.w*bpp:(y+1)*sz.w*bpp], bpp)
			}
			got, want := s.Image(), boxMean(pix, sz.w, sz.h, bpp)
			if got == nil {
				t.Fatalf("%dx%d bpp %d: no preview after every row", sz.w, sz.h, bpp)
			}
			if got.Rect != want.Rect || !bytes.Equal(got.Pix, want.Pix) {
				t.Errorf("%dx%d bpp %d: preview %v differs from the box mean %v", sz.w, sz.h, bpp, got.Rect, want.Rect)
			}
		}
	}
}

func TestScalerSizesAndOrder(t *testing.T) {
	t.Parallel()
	if thumbnail.NewScaler(0, 10) != nil {
		t.Error("a scaler for an empty image")
	}
	s := thumbnail.NewScaler(1280, 720)
	row := make([]byte, 1280*3)
	s.Row(1, row, 3) // out of order: ignored
	if s.Image() != nil {
		t.Error("a preview before any row")
	}
	for y := range 719 {
		s.Row(y, row, 3)
	}
	if s.Image() != nil {
		t.Error("a preview with its last row missing")
	}
	s.Row(719, row, 3)
	th, err := thumbnail.FromImage(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(th.Data))
	if err != nil {
		t.Fatalf("not a JPEG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 180 || th.Width != 320 || th.Height != 180 {
		t.Errorf("thumbnail %v (says %dx%d), want 320x180", b, th.Width, th.Height)
	}
	if _, err := thumbnail.FromImage(image.NewRGBA(image.Rect(0, 0, 1280, 720))); err == nil {
		t.Error("FromImage took a full-size image")
	}
}

func TestScalerTransparentIsBlack(t *testing.T) {
	t.Parallel()
	s := thumbnail.NewScaler(8, 8)
	row := bytes.Repeat([]byte{250, 250, 250, 0}, 8)
	for y := range 8 {
		s.Row(y, row, 4)
	}
	if p := s.Image().Pix[:4]; p[0] != 0 || p[1] != 0 || p[2] != 0 || p[3] != 255 {
		t.Errorf("a transparent pixel's preview %v, want opaque black as Make gives", p)
	}
}
