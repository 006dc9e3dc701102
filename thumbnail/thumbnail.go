// Package thumbnail makes the small previews of screenshots and diffs that
// lists and the dashboard show instead of full-size images: a 2,000-job
// batch page loads 2,000 previews.
//
// Previews are JPEG (quality 70), at most Width pixels wide: the standard
// library encodes JPEG, and no pure-Go WebP encoder is among the modules
// this project can use (github.com/gen2brain/webp runs libwebp compiled to
// WebAssembly, a runtime of its own for one codec). A 320-pixel JPEG of a
// screenshot is typically 10-25 KB against 100-400 KB for the PNG segment.
//
// Make decodes an image; a Scaler makes the same-sized preview from rows
// already in hand (the capture's PNG cutter), with no decode.
//
// The package is a leaf: the standard library and golang.org/x/image only.
package thumbnail

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	_ "image/png" // screenshots and diffs
	"io"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // webp screenshots
)

const (
	// Width is the widest a thumbnail gets; narrower images keep their width.
	Width = 320
	// MaxHeight crops a very tall image (a full-page screenshot) at the top:
	// a preview shows the start of the page.
	MaxHeight = 2 * Width
	// Quality is the JPEG quality.
	Quality = 70
	// ContentType of every thumbnail.
	ContentType = "image/jpeg"
)

// Thumbnail is an encoded preview.
type Thumbnail struct {
	Data          []byte
	Width, Height int
}

// Make decodes a PNG, JPEG or WebP image and returns its preview: scaled to
// Width pixels wide (never up), cropped to MaxHeight, as JPEG.
func Make(data []byte) (*Thumbnail, error) {
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("thumbnail: decode: %w", err)
	}
	b := src.Bounds()
	if b.Dx() == 0 || b.Dy() == 0 {
		return nil, fmt.Errorf("thumbnail: empty image %dx%d", b.Dx(), b.Dy())
	}
	w, h, rows := Geometry(b.Dx(), b.Dy())
	srcRect := b
	srcRect.Max.Y = b.Min.Y + rows // a tall image keeps its top: the part that scales to MaxHeight
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, srcRect, draw.Src, nil)
	var buf bytes.Buffer
	if err := Encode(&buf, dst); err != nil {
		return nil, err
	}
	return &Thumbnail{Data: buf.Bytes(), Width: w, Height: h}, nil
}

// Encode writes img as a thumbnail JPEG.
func Encode(w io.Writer, img image.Image) error {
	if err := jpeg.Encode(w, img, &jpeg.Options{Quality: Quality}); err != nil {
		return fmt.Errorf("thumbnail: encode: %w", err)
	}
	return nil
}
