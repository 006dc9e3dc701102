package diff

import "encoding/binary"

// maxYIQDelta is the largest possible value of colorDelta (black against
// white); a pixel differs when its delta exceeds maxYIQDelta·threshold².
const maxYIQDelta = 35215

// YIQ weights of pixelmatch (Kotsarenko & Ramos).
const (
	yR, yG, yB = 0.29889531, 0.58662247, 0.11448223
	iR, iG, iB = 0.59597799, 0.27417610, 0.32180189
	qR, qG, qB = 0.21147017, 0.52261711, 0.31114694
)

// yiqLambda bounds colorDelta by the squared channel distance: |delta| ≤
// yiqLambda·(dr²+dg²+db²) for opaque pixels (the largest eigenvalue of the
// quadratic form, 0.25608, rounded up), so a pixel whose channels moved
// that little is below the threshold without any floating point.
const yiqLambda = 0.2561

// yiqLambdaMin bounds it from below: |delta| ≥ yiqLambdaMin·(dr²+dg²+db²)
// (the smallest eigenvalue of the form, 0.04481, rounded down; a margin
// far above the rounding of colorDelta), so a pixel whose channels moved
// that far is above the threshold without any floating point
// (TestLargeDeltaBound).
const yiqLambdaMin = 0.0447

// colorDelta is the squared YIQ distance between pixel k of a and pixel m
// of b (byte offsets); as in pixelmatch its sign is negative when a's pixel
// is the brighter one. Opaque pixels are compared as pixelmatch 7 does,
// from the channel differences; semi-transparent pixels are blended with
// white first (colorDeltaBlended).
func colorDelta(a, b []byte, k, m int) float64 {
	p, q := a[k:k+4:k+4], b[m:m+4:m+4]
	if p[3] == 255 && q[3] == 255 {
		return opaqueDelta(p, q)
	}
	return colorDeltaBlended(p, q, bgWhite, false)
}

// opaqueDelta is colorDelta of two opaque pixels, pixelmatch 7's
// arithmetic step for step (so its rounding, and its counts, are the same).
func opaqueDelta(p, q []byte) float64 {
	dr := float64(int(p[0]) - int(q[0]))
	dg := float64(int(p[1]) - int(q[1]))
	db := float64(int(p[2]) - int(q[2]))
	// float64(…) rounds each product, so no architecture fuses them into
	// a multiply-add with other rounding (the Go spec allows that otherwise).
	y := float64(dr*yR) + float64(dg*yG) + float64(db*yB)
	i := float64(dr*iR) - float64(dg*iG) - float64(db*iB)
	qq := float64(dr*qR) - float64(dg*qG) + float64(db*qB)
	delta := float64(0.5053*y*y) + float64(0.299*i*i) + float64(0.1957*qq*qq)
	if y > 0 {
		return -delta
	}
	return delta
}

// background is what semi-transparent pixels are blended over: white, or
// one colour of pixelmatch 7's checkerboard.
type background struct {
	checker bool
	r, g, b float64
}

// bgWhite blends with white.
var bgWhite = background{}

// checkerAt is pixelmatch 7's checkerboard colour for the pixel at byte
// index k (4·(y·width+x)).
func checkerAt(k int) background {
	f := float64(k)
	return background{checker: true, r: 48 + 159*float64(k%2), g: 48 + 159*float64(truncDiv(f, 1.618033988749895, 1/1.618033988749895)%2),
		b: 48 + 159*float64(truncDiv(f, 2.618033988749895, 1/2.618033988749895)%2)}
}

// truncDiv is int32(f/d) for 0 ≤ f < 2³¹ (pixelmatch's `f / d | 0`), by a
// multiplication with inv = 1/d: f·inv is within 2⁻²² of f/d below 2³⁰ (a
// few ulps), so the two truncate alike unless f·inv is that close to an
// integer, when the division decides (TestTruncDiv).
func truncDiv(f, d, inv float64) int32 {
	q := f * inv
	t := int32(q)
	if frac := q - float64(t); frac < 1e-6 || frac > 1-1e-6 || q >= 1<<30 {
		return int32(f / d)
	}
	return t
}

// colorDeltaBlended is colorDelta (or lumaDelta with yOnly) of two pixels
// of which one at least is semi-transparent: over white they are blended
// first and converted one by one, as snapq always did; over pixelmatch 7's
// checkerboard with its arithmetic.
func colorDeltaBlended(p, q []byte, bg background, yOnly bool) float64 {
	if p[0] == q[0] && p[1] == q[1] && p[2] == q[2] && p[3] == q[3] {
		return 0
	}
	if !bg.checker {
		r1, g1, b1 := blendRGB(p[0], p[1], p[2], p[3])
		r2, g2, b2 := blendRGB(q[0], q[1], q[2], q[3])
		y1, y2 := rgb2y(r1, g1, b1), rgb2y(r2, g2, b2)
		if yOnly {
			return y1 - y2
		}
		y := y1 - y2
		i := rgb2i(r1, g1, b1) - rgb2i(r2, g2, b2)
		qq := rgb2q(r1, g1, b1) - rgb2q(r2, g2, b2)
		return signed(0.5053*y*y+0.299*i*i+0.1957*qq*qq, y1 > y2)
	}
	if (p[3]+1)&0xfe == 0 && (q[3]+1)&0xfe == 0 {
		return checkerDeltaOpaqueOrClear(p, q, bg, yOnly)
	}
	return checkerDelta(p, q, bg, yOnly)
}

// checkerDelta is colorDeltaBlended over pixelmatch 7's checkerboard, in
// its arithmetic.
func checkerDelta(p, q []byte, bg background, yOnly bool) float64 {
	a1, a2 := float64(p[3]), float64(q[3])
	da := a1 - a2
	dr := (float64(p[0])*a1 - float64(q[0])*a2 - bg.r*da) / 255
	dg := (float64(p[1])*a1 - float64(q[1])*a2 - bg.g*da) / 255
	db := (float64(p[2])*a1 - float64(q[2])*a2 - bg.b*da) / 255
	y := float64(dr*yR) + float64(dg*yG) + float64(db*yB)
	if yOnly {
		return y
	}
	i := float64(dr*iR) - float64(dg*iG) - float64(db*iB)
	qq := float64(dr*qR) - float64(dg*qG) + float64(db*qB)
	return signed(float64(0.5053*y*y)+float64(0.299*i*i)+float64(0.1957*qq*qq), y > 0)
}

// checkerDeltaOpaqueOrClear is colorDeltaBlended over the checkerboard of
// two pixels each opaque or fully transparent (alpha 255 or 0): the
// channel differences (c1·a1 − c2·a2 − bg·(a1−a2))/255 are then integers
// that the division by 255 gives exactly, so they are worked out in
// integers, without the three divisions, and the rest is the same
// floating point (TestCheckerDeltaOpaqueOrClear).
func checkerDeltaOpaqueOrClear(p, q []byte, bg background, yOnly bool) float64 {
	s1, s2 := int(p[3])/255, int(q[3])/255 // 1 opaque, 0 transparent
	ds := s1 - s2
	dr := float64(int(p[0])*s1 - int(q[0])*s2 - int(bg.r)*ds)
	dg := float64(int(p[1])*s1 - int(q[1])*s2 - int(bg.g)*ds)
	db := float64(int(p[2])*s1 - int(q[2])*s2 - int(bg.b)*ds)
	y := float64(dr*yR) + float64(dg*yG) + float64(db*yB)
	if yOnly {
		return y
	}
	i := float64(dr*iR) - float64(dg*iG) - float64(db*iB)
	qq := float64(dr*qR) - float64(dg*qG) + float64(db*qB)
	return signed(float64(0.5053*y*y)+float64(0.299*i*i)+float64(0.1957*qq*qq), y > 0)
}

// signed is -delta when negative, else delta.
func signed(delta float64, negative bool) float64 {
	if negative {
		return -delta
	}
	return delta
}

// lumaDelta is the brightness (Y) difference of pixel k minus pixel m of
// the same image: pixelmatch's colorDelta with yOnly set (from the channel
// differences for opaque pixels, as pixelmatch 7).
func lumaDelta(pix []byte, k, m int, bg background) float64 {
	p, q := pix[k:k+4:k+4], pix[m:m+4:m+4]
	if p[3] == 255 && q[3] == 255 {
		return float64(float64(int(p[0])-int(q[0]))*yR) + float64(float64(int(p[1])-int(q[1]))*yG) + float64(float64(int(p[2])-int(q[2]))*yB)
	}
	return colorDeltaBlended(p, q, bg, true)
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

func rgb2y(r, g, b float64) float64 { return float64(r*yR) + float64(g*yG) + float64(b*yB) }
func rgb2i(r, g, b float64) float64 { return float64(r*iR) - float64(g*iG) - float64(b*iB) }
func rgb2q(r, g, b float64) float64 { return float64(r*qR) - float64(g*qG) + float64(b*qB) }

// blend mixes channel value c at opacity a with white.
func blend(c, a float64) float64 { return 255 + (c-255)*a }

// antialiased reports whether pixel (x1, y1) of img is likely part of
// anti-aliasing; other is the second image (same w×h view). It follows
// pixelmatch's antialiased() step for step, semi-transparent pixels
// blended with white.
func antialiased(img, other raster, x1, y1 int) bool {
	return antialiasedOver(img, other, x1, y1, false)
}

// antialiasedOver is antialiased; checker blends semi-transparent pixels
// over pixelmatch 7's checkerboard instead of white. Opaque neighbourhoods
// take antialiasedOpaque.
func antialiasedOver(img, other raster, x1, y1 int, checker bool) bool {
	if aa, ok := antialiasedOpaque(img, other, x1, y1); ok {
		return aa
	}
	bg := bgWhite
	if checker {
		bg = checkerAt(4 * (y1*img.w + x1))
	}
	return antialiasedFloat(img, other, x1, y1, bg)
}

// antialiasedFloat is antialiased in pixelmatch's floating point, for
// neighbourhoods with semi-transparent pixels.
func antialiasedFloat(img, other raster, x1, y1 int, bg background) bool {
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
			delta := lumaDelta(img.pix, pos, y*img.stride+4*x, bg)
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
	return (hasManySiblings(&img, loX, loY) && hasManySiblings(&other, loX, loY)) ||
		(hasManySiblings(&img, hiX, hiY) && hasManySiblings(&other, hiX, hiY))
}

// lumaWeights are the luma weights times 10⁸: integers, so the luma of an
// opaque pixel (lumaInt) is exact and so is the order of two lumas. The
// order of pixelmatch's floating-point luma differences is the same: two
// neighbours' lumas differ by at least 10⁻⁸ (no two channel triples within
// ±255 have the same weighted sum; TestLumaIntOrder), far above its
// rounding error.
const (
	lumaR, lumaG, lumaB = 29889531, 58662247, 11448223
)

// lumaInt is 10⁸ times the luma of the opaque pixel v (bytes R, G, B, A
// from the lowest).
func lumaInt(v uint32) int64 {
	return lumaR*int64(v&0xff) + lumaG*int64(v>>8&0xff) + lumaB*int64(v>>16&0xff)
}

// antialiasedOpaque is antialiased in integers when pixel (x1, y1) and its
// neighbours are opaque in img; ok is false, and nothing decided, otherwise.
// Neighbours are visited in pixelmatch's order (column by column), which
// decides between equally bright ones.
func antialiasedOpaque(img, other raster, x1, y1 int) (aa, ok bool) {
	w, h, p := img.w, img.h, img.pix
	if x1 > 0 && y1 > 0 && x1 < w-1 && y1 < h-1 && manyEqualNeighbours(&img, x1, y1) {
		// pixelmatch stops at the third neighbour of the same brightness;
		// for opaque pixels that is the same colour (TestLumaIntOrder), so
		// the count is decided first, by word compares.
		return false, true
	}
	x0, y0 := max(x1-1, 0), max(y1-1, 0)
	x2, y2 := min(x1+1, w-1), min(y1+1, h-1)
	cv := binary.LittleEndian.Uint32(p[y1*img.stride+4*x1:])
	if cv>>24 != 0xff {
		return false, false
	}
	center := lumaInt(cv)
	zeroes := 0
	if x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2 {
		zeroes = 1
	}
	var lo, hi int64
	var loX, loY, hiX, hiY int
	for x := x0; x <= x2; x++ {
		for y := y0; y <= y2; y++ {
			if x == x1 && y == y1 {
				continue
			}
			v := binary.LittleEndian.Uint32(p[y*img.stride+4*x:])
			if v>>24 != 0xff {
				return false, false
			}
			switch delta := center - lumaInt(v); {
			case delta == 0:
				zeroes++
				if zeroes > 2 {
					return false, true
				}
			case delta < lo:
				lo, loX, loY = delta, x, y
			case delta > hi:
				hi, hiX, hiY = delta, x, y
			}
		}
	}
	if lo == 0 || hi == 0 {
		return false, true
	}
	return (hasManySiblings(&img, loX, loY) && hasManySiblings(&other, loX, loY)) ||
		(hasManySiblings(&img, hiX, hiY) && hasManySiblings(&other, hiX, hiY)), true
}

// manyEqualNeighbours reports whether more than two of the eight
// neighbours of pixel (x1, y1), off the edges, have exactly its colour
// (hasManySiblings' count, without branches on the data).
func manyEqualNeighbours(img *raster, x1, y1 int) bool {
	return sameAround(img, x1, y1) > 2
}

// hasManySiblings reports whether pixel (x1, y1) has three or more
// neighbours of exactly its colour (a pixel on the edge starts at one).
func hasManySiblings(img *raster, x1, y1 int) bool {
	if x1 > 0 && y1 > 0 && x1 < img.w-1 && y1 < img.h-1 {
		return manyEqualNeighbours(img, x1, y1) // inside: no bounds logic
	}
	x0, y0 := max(x1-1, 0), max(y1-1, 0)
	x2, y2 := min(x1+1, img.w-1), min(y1+1, img.h-1)
	p := img.pix
	c := binary.LittleEndian.Uint32(p[y1*img.stride+4*x1:])
	zeroes := 0
	if x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2 {
		zeroes = 1
	}
	for x := x0; x <= x2; x++ {
		for y := y0; y <= y2; y++ {
			if x == x1 && y == y1 {
				continue
			}
			if binary.LittleEndian.Uint32(p[y*img.stride+4*x:]) == c {
				zeroes++
			}
			if zeroes > 2 {
				return true
			}
		}
	}
	return false
}
