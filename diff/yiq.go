package diff

// maxYIQDelta is the largest possible value of colorDelta (black against
// white); a pixel differs when its delta exceeds maxYIQDelta·threshold².
const maxYIQDelta = 35215

// colorDelta is the squared YIQ distance between pixel k of a and pixel m
// of b (byte offsets); as in pixelmatch its sign is negative when a's pixel
// is the brighter one. Semi-transparent pixels are blended with white first.
func colorDelta(a, b []byte, k, m int) float64 {
	r1, g1, b1, a1 := a[k], a[k+1], a[k+2], a[k+3]
	r2, g2, b2, a2 := b[m], b[m+1], b[m+2], b[m+3]
	if r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2 {
		return 0
	}
	fr1, fg1, fb1 := blendRGB(r1, g1, b1, a1)
	fr2, fg2, fb2 := blendRGB(r2, g2, b2, a2)
	y1, y2 := rgb2y(fr1, fg1, fb1), rgb2y(fr2, fg2, fb2)
	y := y1 - y2
	i := rgb2i(fr1, fg1, fb1) - rgb2i(fr2, fg2, fb2)
	q := rgb2q(fr1, fg1, fb1) - rgb2q(fr2, fg2, fb2)
	delta := 0.5053*y*y + 0.299*i*i + 0.1957*q*q
	if y1 > y2 {
		return -delta
	}
	return delta
}

// lumaDelta is the brightness (Y) difference of pixel k minus pixel m of
// the same image: pixelmatch's colorDelta with yOnly set.
func lumaDelta(p []byte, k, m int) float64 {
	r1, g1, b1, a1 := p[k], p[k+1], p[k+2], p[k+3]
	r2, g2, b2, a2 := p[m], p[m+1], p[m+2], p[m+3]
	if r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2 {
		return 0
	}
	fr1, fg1, fb1 := blendRGB(r1, g1, b1, a1)
	fr2, fg2, fb2 := blendRGB(r2, g2, b2, a2)
	return rgb2y(fr1, fg1, fb1) - rgb2y(fr2, fg2, fb2)
}

// blendRGB blends a straight-alpha colour with white.
func blendRGB(r, g, b, a uint8) (float64, float64, float64) {
	fr, fg, fb := float64(r), float64(g), float64(b)
	if a < 255 {
		fa := float64(a) / 255
		fr, fg, fb = blend(fr, fa), blend(fg, fa), blend(fb, fa)
	}
	return fr, fg, fb
}

func rgb2y(r, g, b float64) float64 { return r*0.29889531 + g*0.58662247 + b*0.11448223 }
func rgb2i(r, g, b float64) float64 { return r*0.59597799 - g*0.27417610 - b*0.32180189 }
func rgb2q(r, g, b float64) float64 { return r*0.21147017 - g*0.52261711 + b*0.31114694 }

// blend mixes channel value c at opacity a with white.
func blend(c, a float64) float64 { return 255 + (c-255)*a }

// antialiased reports whether pixel (x1, y1) of img is likely part of
// anti-aliasing; other is the second image (same w×h view). It follows
// pixelmatch's antialiased() step for step.
func antialiased(img, other raster, x1, y1 int) bool {
	w, h := img.w, img.h
	x0, y0 := max(x1-1, 0), max(y1-1, 0)
	x2, y2 := min(x1+1, w-1), min(y1+1, h-1)
	pos := y1*img.stride + 4*x1
	zeroes := 0
	if x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2 {
		zeroes = 1
	}
	var lo, hi float64
	var loX, loY, hiX, hiY int
	for x := x0; x <= x2; x++ {
		for y := y0; y <= y2; y++ {
			if x == x1 && y == y1 {
				continue
			}
			delta := lumaDelta(img.pix, pos, y*img.stride+4*x)
			switch {
			case delta == 0:
				zeroes++
				if zeroes > 2 {
					return false // more than two equal neighbours: not anti-aliasing
				}
			case delta < lo:
				lo, loX, loY = delta, x, y
			case delta > hi:
				hi, hiX, hiY = delta, x, y
			}
		}
	}
	if lo == 0 || hi == 0 {
		return false // no darker and brighter neighbours both
	}
	return (hasManySiblings(img, loX, loY) && hasManySiblings(other, loX, loY)) ||
		(hasManySiblings(img, hiX, hiY) && hasManySiblings(other, hiX, hiY))
}

// hasManySiblings reports whether pixel (x1, y1) has three or more
// neighbours of exactly its colour (a pixel on the edge starts at one).
func hasManySiblings(img raster, x1, y1 int) bool {
	x0, y0 := max(x1-1, 0), max(y1-1, 0)
	x2, y2 := min(x1+1, img.w-1), min(y1+1, img.h-1)
	p := img.pix
	pos := y1*img.stride + 4*x1
	c := p[pos : pos+4 : pos+4]
	zeroes := 0
	if x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2 {
		zeroes = 1
	}
	for x := x0; x <= x2; x++ {
		for y := y0; y <= y2; y++ {
			if x == x1 && y == y1 {
				continue
			}
			q := y*img.stride + 4*x
			if p[q] == c[0] && p[q+1] == c[1] && p[q+2] == c[2] && p[q+3] == c[3] {
				zeroes++
			}
			if zeroes > 2 {
				return true
			}
		}
	}
	return false
}
