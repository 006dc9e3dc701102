package diff

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
)

// DecodePNG decodes a PNG screenshot.
func DecodePNG(data []byte) (image.Image, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode png: %w", err)
	}
	return img, nil
}

// encoder favours speed: diff images are mostly flat and compress well
// even at the fastest level.
var encoder = png.Encoder{CompressionLevel: png.BestSpeed}

// EncodePNG encodes img (typically Result.Diff) as PNG at the fastest
// compression level.
func EncodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	if err := encoder.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}
