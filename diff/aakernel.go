package diff

import "encoding/binary"

// antialiased is pixelmatch's anti-aliasing test of a pixel over the
// threshold, pa in the first image and pb in the second: part of
// anti-aliasing in the first image or in the second. Off the edges each
// image's test is one load of the neighbourhood (antialiasedInside), and
// none for an opaque white or black pixel (extremeLuma). Right after a
// pixel with more than two neighbours of its colour in both images (a
// changed area of one colour), the next one in the row is first tried
// with flat, three loads an image instead of nine.
func (c *comparer) antialiased(x, y int, pa, pb uint32) bool {
	if x > 0 && y > 0 && x < c.a.w-1 && y < c.a.h-1 {
		k := y*c.a.w + x
		if k == c.flatNext && flat(&c.a, x, y) && flat(&c.b, x, y) {
			c.flatNext++
			return false
		}
		// An extreme centre counts as many for the hint (flat decides).
		aa, manyA, manyB := false, true, true
		if !extremeLuma(pa) {
			if aa, manyA = c.antialiasedInside(&c.a, &c.b, x, y); aa {
				return true
			}
		}
		if !extremeLuma(pb) {
			aa, manyB = c.antialiasedInside(&c.b, &c.a, x, y)
		}
		if manyA && manyB {
			c.flatNext = k + 1
		}
		return aa
	}
	return antialiasedOver(c.a, c.b, x, y, c.checker) || antialiasedOver(c.b, c.a, x, y, c.checker)
}

// extremeLuma reports whether pixel v is opaque white or opaque black, the
// brightest and the darkest colour: pixelmatch finds no neighbour brighter
// than white nor darker than black, opaque or blended over white or the
// checkerboard (a blend's channels lie between its colour's and the
// background's, 0–255, and its floating-point luma is monotonic in them;
// over the checkerboard the channel differences' numerators are exact
// integers of one sign), so such a pixel is never anti-aliasing in its
// image (TestExtremeLumaNotAntialiased).
func extremeLuma(v uint32) bool {
	return v == 0xffffffff || v == 0xff000000
}

// antialiasedInside is antialiasedOver(*img, *other, …) for an interior
// pixel, from one load of its neighbourhood (extremes): more than two
// neighbours of its colour (many) mean no anti-aliasing whatever the
// opacity (pixelmatch stops there); an opaque neighbourhood runs
// pixelmatch's whole loop in integers, where an opaque neighbour of the
// same luma is the same colour (TestLumaIntOrder), neither darker nor
// brighter; a translucent one goes to antialiasedTranslucent with the
// pixels extremes read.
func (c *comparer) antialiasedInside(img, other *raster, x, y int) (aa, many bool) {
	var hood [9]uint32
	lo, hi, opaque, same := extremes(img, x, y, &hood)
	switch {
	case same > 2:
		return false, true
	case !opaque:
		bg := bgWhite
		if c.checker {
			bg = c.checkerAt(x, y)
		}
		return antialiasedTranslucent(img, other, x, y, &hood, same, &bg), false
	case lo < 0 || hi < 0:
		return false, false
	}
	return bothManySiblings(img, other, x+neighbourDX[lo], y+neighbourDY[lo]) ||
		bothManySiblings(img, other, x+neighbourDX[hi], y+neighbourDY[hi]), false
}

// antialiasedTranslucent is antialiasedFloat for an interior pixel of img,
// its neighbours and itself in hood and same of them equal to it
// (extremes): the darkest and brightest neighbours found in integers
// (translucentExtremes) where they are exact, else in floating point
// (antialiasedTranslucentFloat).
func antialiasedTranslucent(img, other *raster, x1, y1 int, hood *[9]uint32, same int, bg *background) bool {
	lo, hi, ok := translucentExtremes(hood, same, bg)
	if !ok {
		return antialiasedTranslucentFloat(img, other, x1, y1, bg)
	}
	if lo < 0 || hi < 0 {
		return false // more than two equal neighbours, or no darker and brighter ones both
	}
	return bothManySiblings(img, other, x1+neighbourDX[lo], y1+neighbourDY[lo]) ||
		bothManySiblings(img, other, x1+neighbourDX[hi], y1+neighbourDY[hi])
}

// translucentExtremes is antialiasedTranslucentFloat's darkest (lo) and
// brightest (hi) neighbour of an interior pixel (hood[8]; hood[0:8] its
// neighbours in pixelmatch's order, same of them equal to it), as
// indices 0–7 in pixelmatch's order, -1 for none or when more than two
// neighbours are as bright as the centre, in integers. Blended over a
// background colour (bg, white 255), a luma difference is exactly
// L/(255·10⁸) with the integer L = Σ lumaW·X, X = (c1−bg)·a1 − (c2−bg)·a2
// per channel (pixelmatch's numerators over the checkerboard; over white
// the blends' difference times 255): two distinct L are at least 3.9·10⁻¹¹
// apart, forty times pixelmatch's rounding error on two such differences
// (under 10⁻¹², for terms under 510), so L orders and signs the neighbours
// as its floating point does. ok is false, nothing decided, where rounding
// could decide: an L of 0 but for an exactly equal colour, or an extreme L
// shared by another colour (TestTranslucentExtremesExact). The pixels come
// as extremes read them, and zeros and ties are counted without branches
// (TestTranslucentExtremesMatchLoop).
func translucentExtremes(hood *[9]uint32, same int, bg *background) (lo, hi int, ok bool) {
	n, v := (*[8]uint32)(hood[:8]), hood[8]
	lbg := lumaInt(0xffffff) // Σ lumaW·bg: white, or the checkerboard colour
	if bg.checker {
		lbg = lumaInt(uint32(bg.r) | uint32(bg.g)<<8 | uint32(bg.b)<<16)
	}
	lp := int64(v>>24) * (lumaInt(v) - lbg)
	var ls [8]int64
	for k := range 8 {
		ls[k] = lp - int64(n[k]>>24)*(lumaInt(n[k])-lbg) // Σ lumaW·X
	}
	zeroes := b2i(ls[0] == 0) + b2i(ls[1] == 0) + b2i(ls[2] == 0) + b2i(ls[3] == 0) +
		b2i(ls[4] == 0) + b2i(ls[5] == 0) + b2i(ls[6] == 0) + b2i(ls[7] == 0)
	if zeroes != same && !exactZeros(v, n, &ls, bg) { // a zero of another colour
		return -1, -1, false // maybe not 0 in floating point
	}
	mn := min(ls[0]<<4, ls[1]<<4|1, ls[2]<<4|2, ls[3]<<4|3, ls[4]<<4|4, ls[5]<<4|5, ls[6]<<4|6, ls[7]<<4|7)
	mx := max(ls[0]<<4|7, ls[1]<<4|6, ls[2]<<4|5, ls[3]<<4|4, ls[4]<<4|3, ls[5]<<4|2, ls[6]<<4|1, ls[7]<<4)
	if zeroes > 2 || mn >= 0 || mx < 16 {
		return -1, -1, true
	}
	lo, hi = int(mn&15), 7-int(mx&15)
	return lo, hi, uniqueExtremes(n, &ls, lo, hi)
}

// exactZeros reports whether every neighbour n[k] whose integer form
// ls[k] (translucentExtremes) is 0 has a luma difference of exactly 0 from
// the centre v in floating point too (exactZero).
func exactZeros(v uint32, n *[8]uint32, ls *[8]int64, bg *background) bool {
	for k := range 8 {
		if ls[k] == 0 && !exactZero(v, n[k], bg) {
			return false
		}
	}
	return true
}

// exactZero reports whether pixelmatch's luma difference of pixels v and
// n, whose integer form L is 0, is exactly 0 in floating point: they are
// equal, or their X (translucentExtremes) is 0 over the checkerboard (its
// numerators are exact), or over white at one alpha (then both are
// transparent, blended to white exactly, or equal).
func exactZero(v, n uint32, bg *background) bool {
	if v == n {
		return true
	}
	a1, a2 := int(v>>24), int(n>>24)
	if !bg.checker {
		return a1 == a2
	}
	br, bgg, bb := int(bg.r), int(bg.g), int(bg.b)
	return (int(v&0xff)-br)*a1 == (int(n&0xff)-br)*a2 &&
		(int(v>>8&0xff)-bgg)*a1 == (int(n>>8&0xff)-bgg)*a2 &&
		(int(v>>16&0xff)-bb)*a1 == (int(n>>16&0xff)-bb)*a2
}

// uniqueExtremes reports whether no neighbour of another colour than
// neighbour lo (hi) has its luma difference ls[lo] (ls[hi]): an exact tie,
// which pixelmatch's rounding may order either way. Branch-free: ties are
// rare, and a branch on them mispredicted.
func uniqueExtremes(n *[8]uint32, ls *[8]int64, lo, hi int) bool {
	llo, lhi, nlo, nhi := ls[lo&7], ls[hi&7], n[lo&7], n[hi&7]
	ties := 0
	for k := range 8 {
		ties += b2i(ls[k] == llo)&b2i(n[k] != nlo) | b2i(ls[k] == lhi)&b2i(n[k] != nhi)
	}
	return ties == 0
}

// antialiasedTranslucentFloat is antialiasedFloat for an interior pixel of
// img, without its bounds logic and copies of the rasters, with one call a
// translucent neighbour (TestAntialiasedInteriorMatchesFloat).
func antialiasedTranslucentFloat(img, other *raster, x1, y1 int, bg *background) bool {
	s, pix := img.stride, img.pix
	pos := y1*s + 4*x1
	p := pix[pos : pos+4 : pos+4]
	var lo, hi float64
	loK, hiK, zeroes := 0, 0, 0
	for k := range 8 {
		m := pos + neighbourDY[k]*s + 4*neighbourDX[k]
		switch delta := lumaOf(p, pix[m:m+4:m+4], bg); {
		case delta == 0:
			zeroes++
			if zeroes > 2 {
				return false // more than two equal neighbours: not anti-aliasing
			}
		case delta < lo:
			lo, loK = delta, k
		case delta > hi:
			hi, hiK = delta, k
		}
	}
	if lo == 0 || hi == 0 {
		return false // no darker and brighter neighbours both
	}
	return bothManySiblings(img, other, x1+neighbourDX[loK], y1+neighbourDY[loK]) ||
		bothManySiblings(img, other, x1+neighbourDX[hiK], y1+neighbourDY[hiK])
}

// lumaOf is lumaDelta of pixels p and q, colorDeltaBlended's cases taken
// here rather than through its calls.
func lumaOf(p, q []byte, bg *background) float64 {
	switch {
	case p[3] == 255 && q[3] == 255:
		return float64(float64(int(p[0])-int(q[0]))*yR) + float64(float64(int(p[1])-int(q[1]))*yG) + float64(float64(int(p[2])-int(q[2]))*yB)
	case binary.LittleEndian.Uint32(p) == binary.LittleEndian.Uint32(q):
		return 0
	case !bg.checker:
		return colorDeltaBlended(p, q, *bg, true)
	case (p[3]+1)&0xfe == 0 && (q[3]+1)&0xfe == 0: // alphas 0 or 255
		return checkerDeltaOpaqueOrClear(p, q, *bg, true)
	}
	return checkerDelta(p, q, *bg, true)
}

// sameAround counts the neighbours of interior pixel (x1, y1) of img of
// exactly its colour, straight from the rows, in registers (a struct
// returned by value was copied with wide moves that cannot be forwarded
// from its narrow stores, a stall a call).
func sameAround(img *raster, x1, y1 int) int {
	s := img.stride
	pos := (y1-1)*s + 4*(x1-1)
	r0 := img.pix[pos : pos+12 : pos+12]
	r1 := img.pix[pos+s : pos+s+12 : pos+s+12]
	r2 := img.pix[pos+2*s : pos+2*s+12 : pos+2*s+12]
	le := binary.LittleEndian
	c := le.Uint32(r1[4:])
	return b2i(le.Uint32(r0) == c) + b2i(le.Uint32(r1) == c) + b2i(le.Uint32(r2) == c) +
		b2i(le.Uint32(r0[4:]) == c) + b2i(le.Uint32(r2[4:]) == c) +
		b2i(le.Uint32(r0[8:]) == c) + b2i(le.Uint32(r1[8:]) == c) + b2i(le.Uint32(r2[8:]) == c)
}

// flat reports whether the interior pixel (x1, y1) of img has the colour
// of its left, right and upper neighbours: three equal neighbours, so
// sameAround is above 2, from three loads (wide changed areas of one
// colour, where every pixel differs, take this way).
func flat(img *raster, x1, y1 int) bool {
	s := img.stride
	pos := y1*s + 4*(x1-1)
	r := img.pix[pos-s+4 : pos+12 : pos+12]
	le := binary.LittleEndian
	c := le.Uint32(r[s:])
	return le.Uint32(r[s-4:]) == c && le.Uint32(r[s+4:]) == c && le.Uint32(r) == c
}

// extremes are pixelmatch's darkest and brightest neighbours of the
// interior pixel (x1, y1) of img (the first of equals in its order,
// column by column, top to bottom), as indices 0–7, or -1 when no
// neighbour is darker (brighter) than the centre; same counts the
// neighbours of the centre's colour, and above 2 nothing is found; opaque
// is false, and nothing found, when one of the nine pixels is translucent,
// and then hood holds them (the neighbours in pixelmatch's order, then the
// pixel) for translucentExtremes. The nine are read into registers, and
// the luma differences (lumaInt, exact) keyed with the index in their low
// four bits, so one branch-free min and max pick the value and the first
// index.
func extremes(img *raster, x1, y1 int, hood *[9]uint32) (lo, hi int, opaque bool, same int) {
	s := img.stride
	pos := (y1-1)*s + 4*(x1-1)
	r0 := img.pix[pos : pos+12 : pos+12]
	r1 := img.pix[pos+s : pos+s+12 : pos+s+12]
	r2 := img.pix[pos+2*s : pos+2*s+12 : pos+2*s+12]
	le := binary.LittleEndian
	v, n0, n1, n2 := le.Uint32(r1[4:]), le.Uint32(r0), le.Uint32(r1), le.Uint32(r2)
	n3, n4, n5, n6, n7 := le.Uint32(r0[4:]), le.Uint32(r2[4:]), le.Uint32(r0[8:]), le.Uint32(r1[8:]), le.Uint32(r2[8:])
	same = b2i(n0 == v) + b2i(n1 == v) + b2i(n2 == v) + b2i(n3 == v) + b2i(n4 == v) + b2i(n5 == v) + b2i(n6 == v) + b2i(n7 == v)
	if same > 2 {
		return -1, -1, true, same
	}
	if (v&n0&n1&n2&n3&n4&n5&n6&n7)>>24 != 0xff {
		hood[0], hood[1], hood[2], hood[3], hood[4] = n0, n1, n2, n3, n4
		hood[5], hood[6], hood[7], hood[8] = n5, n6, n7, v
		return -1, -1, false, same
	}
	c := lumaInt(v)
	d0, d1, d2, d3 := (c-lumaInt(n0))<<4, (c-lumaInt(n1))<<4, (c-lumaInt(n2))<<4, (c-lumaInt(n3))<<4
	d4, d5, d6, d7 := (c-lumaInt(n4))<<4, (c-lumaInt(n5))<<4, (c-lumaInt(n6))<<4, (c-lumaInt(n7))<<4
	mn := min(d0, d1|1, d2|2, d3|3, d4|4, d5|5, d6|6, d7|7)
	mx := max(d0|7, d1|6, d2|5, d3|4, d4|3, d5|2, d6|1, d7)
	lo, hi = -1, -1
	if mn < 0 { // a luma difference below 0 (keys of 0 are 0–7)
		lo = int(mn & 15)
	}
	if mx >= 16 { // a luma difference above 0
		hi = 7 - int(mx&15)
	}
	return lo, hi, true, same
}

// neighbourDX and neighbourDY are the offsets of the eight neighbours in
// pixelmatch's order.
var (
	neighbourDX = [8]int{-1, -1, -1, 0, 0, 1, 1, 1}
	neighbourDY = [8]int{-1, 0, 1, -1, 1, -1, 0, 1}
)

// bothManySiblings is hasManySiblings in img and in other (same size);
// off the edges straight from the counts.
func bothManySiblings(img, other *raster, x, y int) bool {
	if x > 0 && y > 0 && x < img.w-1 && y < img.h-1 {
		return sameAround(img, x, y) > 2 && sameAround(other, x, y) > 2
	}
	return hasManySiblings(img, x, y) && hasManySiblings(other, x, y)
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
