package thumbnail_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/snapq/snapq/thumbnail"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMake(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		w, h         int
		wantW, wantH int
	}{
		{name: "a viewport segment", w: 1280, h: 720, wantW: 320, wantH: 180},
		{name: "narrower than a thumbnail", w: 200, h: 100, wantW: 200, wantH: 100},
		{name: "a full page, cropped at the top", w: 1280, h: 3000, wantW: 320, wantH: thumbnail.MaxHeight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := pngOf(t, tt.w, tt.h)
			th, err := thumbnail.Make(src)
			if err != nil {
				t.Fatal(err)
			}
			img, err := jpeg.Decode(bytes.NewReader(th.Data))
			if err != nil {
				t.Fatalf("not a JPEG: %v", err)
			}
			if b := img.Bounds(); b.Dx() != tt.wantW || b.Dy() != tt.wantH || th.Width != tt.wantW || th.Height != tt.wantH {
				t.Errorf("thumbnail %dx%d (says %dx%d), want %dx%d", b.Dx(), b.Dy(), th.Width, th.Height, tt.wantW, tt.wantH)
			}
			if len(th.Data) >= len(src) && tt.w > thumbnail.Width {
				t.Errorf("thumbnail %d bytes, the image %d", len(th.Data), len(src))
			}
		})
	}
	if _, err := thumbnail.Make([]byte("not an image")); err == nil {
		t.Error("Make(garbage) = nil error")
	}
}
