package pngcut

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"
)

// maxFuzzPNG bounds the PNGs the fuzzer tries; maxFuzzPixels bounds the images whose pieces
// are compared pixel by pixel with the source (a hostile header claims up to 2^26-byte rows).
const (
	maxFuzzPNG    = 64 << 10
	maxFuzzPixels = 1 << 20
)

// fuzzSeedPNG encodes a small w×h image, opaque (RGB) or not (RGBA), with rows that
// exercise every PNG filter.
func fuzzSeedPNG(tb testing.TB, w, h int, opaque bool) []byte {
	tb.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			a := uint8(255)
			if !opaque {
				a = uint8(x * 37)
			}
			m.SetNRGBA(x, y, color.NRGBA{R: uint8(x * y), G: uint8(x + 3*y), B: uint8(y * 11), A: a})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// FuzzCut cuts arbitrary bytes at ranges derived from the inputs. A cut that succeeds gives
// one PNG per range, each as wide as the source and exactly as tall as its range, which
// image/png decodes; when image/png also decodes the source, every piece holds the source's
// pixels of its rows. Any failure on damaged bytes must be an error, not a panic.
func FuzzCut(f *testing.F) {
	rgb, rgba := fuzzSeedPNG(f, 7, 9, true), fuzzSeedPNG(f, 5, 12, false)
	f.Add(rgb, uint16(0), uint16(9), uint8(0))
	f.Add(rgb, uint16(2), uint16(3), uint8(2))
	f.Add(rgba, uint16(0), uint16(1), uint8(3))
	f.Add(rgba, uint16(11), uint16(1), uint8(0))
	f.Add(rgba[:len(rgba)-20], uint16(0), uint16(4), uint8(1)) // truncated
	damaged := bytes.Clone(rgb)
	damaged[len(damaged)/2] ^= 0xff // a bad CRC
	f.Add(damaged, uint16(0), uint16(2), uint8(1))
	f.Add([]byte(pngSignature), uint16(0), uint16(1), uint8(0))
	f.Add([]byte("not a png"), uint16(0), uint16(1), uint8(0))

	f.Fuzz(func(t *testing.T, src []byte, first, size uint16, more uint8) {
		if len(src) > maxFuzzPNG {
			t.Skip()
		}
		// Ranges within the height the IHDR claims (when there is one), so most cuts are valid.
		height, comparePixels := 1, true
		if len(src) >= 33 {
			height = int(binary.BigEndian.Uint32(src[20:24])) // up to 2^32-1: int is 64 bits
			comparePixels = uint64(binary.BigEndian.Uint32(src[16:20]))*uint64(height) <= maxFuzzPixels
		}
		height = max(height, 1)
		var cuts []Range
		for y0, n := int(first)%height, int(more)%4+1; n > 0 && y0 < height; n-- {
			y1 := min(y0+int(size)%height+1, height)
			cuts = append(cuts, Range{y0, y1})
			y0 = y1 + int(size)%3
		}

		pieces, err := Cut(src, cuts)
		if err != nil {
			if pieces != nil {
				t.Fatalf("error %v came with %d pieces", err, len(pieces))
			}
			return
		}
		if len(pieces) != len(cuts) {
			t.Fatalf("%d pieces for %d ranges", len(pieces), len(cuts))
		}
		var whole image.Image
		wholeErr := errors.New("not compared")
		if comparePixels {
			whole, wholeErr = png.Decode(bytes.NewReader(src))
		}
		for i, p := range pieces {
			c := cuts[i]
			m, err := png.Decode(bytes.NewReader(p))
			if err != nil {
				t.Fatalf("piece %d [%d,%d) does not decode: %v", i, c.Y0, c.Y1, err)
			}
			b := m.Bounds()
			if b.Dy() != c.Y1-c.Y0 {
				t.Fatalf("piece %d [%d,%d) is %d rows tall", i, c.Y0, c.Y1, b.Dy())
			}
			if wholeErr != nil {
				continue
			}
			if b.Dx() != whole.Bounds().Dx() {
				t.Fatalf("piece %d is %d px wide, the source %d", i, b.Dx(), whole.Bounds().Dx())
			}
			for y := range b.Dy() {
				for x := range b.Dx() {
					if got, want := m.At(x, y), whole.At(x, c.Y0+y); !sameColor(got, want) {
						t.Fatalf("piece %d pixel (%d,%d) = %v, the source's row %d holds %v", i, x, y, got, c.Y0+y, want)
					}
				}
			}
		}
	})
}

func sameColor(a, b color.Color) bool {
	r1, g1, b1, a1 := a.RGBA()
	r2, g2, b2, a2 := b.RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}
