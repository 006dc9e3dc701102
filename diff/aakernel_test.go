package diff

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// translucentExtremesLoop is translucentExtremes as the fourth pass wrote
// it (a loop over the neighbours that stops at the first inexact zero, and
// the ties looked up pixel by pixel): the reference of
// TestTranslucentExtremesMatchLoop.
func translucentExtremesLoop(img *raster, x1, y1 int, bg *background) (lo, hi int, ok bool) {
	s := img.stride
	pos := y1*s + 4*x1
	v := binary.LittleEndian.Uint32(img.pix[pos : pos+4 : pos+4])
	lbg := lumaInt(0xffffff)
	if bg.checker {
		lbg = lumaInt(uint32(bg.r) | uint32(bg.g)<<8 | uint32(bg.b)<<16)
	}
	lp := int64(v>>24) * (lumaInt(v) - lbg)
	var ls [8]int64
	zeroes := 0
	mn, mx := int64(0), int64(0)
	for k := range 8 {
		m := pos + neighbourDY[k]*s + 4*neighbourDX[k]
		n := binary.LittleEndian.Uint32(img.pix[m : m+4 : m+4])
		l := lp - int64(n>>24)*(lumaInt(n)-lbg)
		if l == 0 {
			if !exactZero(v, n, bg) {
				return -1, -1, false
			}
			zeroes++
		}
		ls[k] = l
		mn, mx = min(mn, l<<4|int64(k)), max(mx, l<<4|int64(7-k))
	}
	if zeroes > 2 || mn >= 0 || mx < 16 {
		return -1, -1, true
	}
	lo, hi = int(mn&15), 7-int(mx&15)
	unique := func(k int) bool {
		for j := range 8 {
			if j != k && ls[j] == ls[k] && pixelAt(img, x1+neighbourDX[j], y1+neighbourDY[j]) != pixelAt(img, x1+neighbourDX[k], y1+neighbourDY[k]) {
				return false
			}
		}
		return true
	}
	return lo, hi, unique(lo) && unique(hi)
}

// pixelAt is pixel (x, y) of img as a little-endian word.
func pixelAt(img *raster, x, y int) uint32 {
	i := y*img.stride + 4*x
	return binary.LittleEndian.Uint32(img.pix[i : i+4 : i+4])
}

// randomNeighbourhood fills the 3×3 img with pixels from a small random
// palette (ties, equal colours and zeros of the integer forms come often),
// or fully random ones, as TestTranslucentExtremesExact does.
func randomNeighbourhood(rng *rand.Rand, img *raster, n int) {
	palette := make([]uint32, 2+n%6)
	for i := range palette {
		alphas := []uint32{0, 1, 128, 254, 255, 255, rng.Uint32N(256)}
		palette[i] = rng.Uint32()&0xffffff | alphas[rng.IntN(len(alphas))]<<24
		if n%3 == 0 { // near grays and near neighbours of one colour
			palette[i] = palette[0]&0xff000000 | uint32(rng.IntN(4))*0x010101 + palette[0]&0xfefefe
		}
	}
	for i := range 9 {
		v := rng.Uint32()
		if n%4 != 0 {
			v = palette[rng.IntN(len(palette))]
		}
		binary.LittleEndian.PutUint32(img.pix[4*i:], v)
	}
}

// checkerColours are white and the four colours of pixelmatch 7's
// checkerboard (its red is 48 at every pixel).
func checkerColours() []background {
	bgs := []background{bgWhite}
	for _, g := range []float64{48, 207} {
		for _, b := range []float64{48, 207} {
			bgs = append(bgs, background{checker: true, r: 48, g: g, b: b})
		}
	}
	return bgs
}

// TestTranslucentExtremesMatchLoop checks translucentExtremes (the
// neighbours in registers, zeros and ties counted without branches)
// against the loop it replaced, result and ok alike, on four million
// random neighbourhoods over white and every checkerboard colour.
func TestTranslucentExtremesMatchLoop(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(51, 52))
	bgs := checkerColours()
	img := raster{pix: make([]byte, 36), stride: 12, w: 3, h: 3}
	for n := range 4_000_000 {
		randomNeighbourhood(rng, &img, n)
		bg := &bgs[n%len(bgs)]
		lo, hi, ok := translucentExtremesAt(&img, 1, 1, bg)
		wlo, whi, wok := translucentExtremesLoop(&img, 1, 1, bg)
		if lo != wlo || hi != whi || ok != wok {
			t.Fatalf("%x over %+v: %d, %d, %v; the loop %d, %d, %v", img.pix, *bg, lo, hi, ok, wlo, whi, wok)
		}
	}
}

// TestExtremeLumaNotAntialiased checks what lets antialiased skip an
// opaque white or black pixel: in pixelmatch's floating point no
// neighbour, opaque or translucent, over white or any checkerboard colour,
// is brighter than white (luma difference below 0) or darker than black
// (above 0), on random neighbours with every alpha and on the colours'
// edges; and its whole test says no on random neighbourhoods.
func TestExtremeLumaNotAntialiased(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(53, 54))
	bgs := checkerColours()
	white, black := []byte{255, 255, 255, 255}, []byte{0, 0, 0, 255}
	for n := range 4_000_000 {
		v := rng.Uint32()
		if n%3 == 0 { // channels at 0 or 255, the blends' bounds
			v = v&0x01010101*0xff | v&0xff000000
		}
		q := binary.LittleEndian.AppendUint32(nil, v)
		bg := &bgs[n%len(bgs)]
		if d := lumaOf(white, q, bg); d < 0 {
			t.Fatalf("%08x over %+v: luma difference from white %v", v, *bg, d)
		}
		if d := lumaOf(black, q, bg); d > 0 {
			t.Fatalf("%08x over %+v: luma difference from black %v", v, *bg, d)
		}
	}
	img := raster{pix: make([]byte, 36), stride: 12, w: 3, h: 3}
	for n := range 400_000 {
		randomNeighbourhood(rng, &img, n)
		centre := [2]uint32{0xffffffff, 0xff000000}[n&1]
		binary.LittleEndian.PutUint32(img.pix[16:], centre)
		for _, bg := range bgs {
			if antialiasedFloat(img, img, 1, 1, bg) {
				t.Fatalf("%x over %+v: an extreme centre anti-aliasing", img.pix, bg)
			}
		}
	}
}

// translucentExtremesAt is translucentExtremes of the interior pixel (x1,
// y1) of img, its neighbourhood read as extremes hands it over.
func translucentExtremesAt(img *raster, x1, y1 int, bg *background) (lo, hi int, ok bool) {
	var hood [9]uint32
	for k := range 8 {
		hood[k] = pixelAt(img, x1+neighbourDX[k], y1+neighbourDY[k])
	}
	hood[8] = pixelAt(img, x1, y1)
	same := 0
	for _, n := range hood[:8] {
		same += b2i(n == hood[8])
	}
	return translucentExtremes(&hood, same, bg)
}
