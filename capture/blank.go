package capture

import (
	"bytes"
	"image"
	"image/color"
)

// colourCounts is a quantised colour histogram of a grid of an image's pixels, what blank
// reads: about 64 × 64 pixels (every width/64-th of every height/64-th row, from the top-left
// corner), each channel of their premultiplied colour in 8 levels of 32, index r<<6 | g<<3 | b.
// The band cutter fills it from the rows it already has in hand (rowHasher), so a capture's
// blank check decodes no PNG; images without one (other formats and paths) are decoded.
type colourCounts [512]uint32

// sampleSteps are the grid's steps for a w × h image.
func sampleSteps(w, h int) (stepX, stepY int) { return max(w/64, 1), max(h/64, 1) }

// add counts one pixel given as non-premultiplied 8-bit RGBA, as image.NRGBA's At(x, y).RGBA()
// gives it (premultiplied, 16-bit), quantised like blank always did.
func (c *colourCounts) add(r, g, b, a uint8) {
	pr, pg, pb, _ := color.NRGBA{R: r, G: g, B: b, A: a}.RGBA()
	c[(pr>>13)<<6|(pg>>13)<<3|pb>>13]++
}

// addRow counts the sampled pixels of one RGBA row (4 bytes a pixel).
func (c *colourCounts) addRow(rgba []byte, stepX int) {
	for x := 0; 4*x+3 < len(rgba); x += stepX {
		p := rgba[4*x : 4*x+4]
		c.add(p[0], p[1], p[2], p[3])
	}
}

// sampleImage is m's colourCounts.
func sampleImage(m image.Image) *colourCounts {
	var c colourCounts
	b := m.Bounds()
	stepX, stepY := sampleSteps(b.Dx(), b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y += stepY {
		for x := b.Min.X; x < b.Max.X; x += stepX {
			r, g, bl, _ := m.At(x, y).RGBA()
			c[(r>>13)<<6|(g>>13)<<3|bl>>13]++
		}
	}
	return &c
}

// blank reports whether the images are nearly one colour, together: a sample of their pixels
// (colourCounts) is read and the share of the most common colour compared with blankShare.
// Images that cannot be decoded are not blank.
func blank(imgs []Image) bool {
	if len(imgs) == 0 {
		return false
	}
	var sum colourCounts
	var total, best uint32
	for _, img := range imgs[:min(len(imgs), 4)] {
		s := img.colours
		if s == nil {
			m, _, err := image.Decode(bytes.NewReader(img.Data))
			if err != nil {
				return false
			}
			s = sampleImage(m)
		}
		for i, n := range s {
			sum[i] += n
			total += n
			best = max(best, sum[i])
		}
		if float64(best) < blankShare*float64(total) {
			return false // this image already has more than one colour: no need to read more
		}
	}
	return total > 0
}
