package diff

import (
	"encoding/binary"
	"image"
	"image/color"
	"image/draw"
	"sync"
)

// raster is straight-alpha (non-premultiplied) RGBA bytes, 4 per pixel,
// rows stride bytes apart, with the origin at (0, 0).
type raster struct {
	pix    []byte
	stride int
	w, h   int
	// unverified marks the premultiplied bytes of an image.RGBA taken as
	// straight alpha before its opacity was checked (toRasterLazy): right
	// only if every pixel is opaque, which the comparison checks row by row
	// as it reads them (settle converts otherwise).
	unverified bool
	// pooled marks pixels converted into a buffer of pixPool, which
	// release returns (Compare, once the comparison is over).
	pooled bool
}

// pixPool recycles byte buffers whose every byte is written before it is
// read: converted images' pixels (palettes, grays; raster.release) and
// diff images' (Result.Release). A recycled buffer needs no zeroing, a
// comparison of paletted images allocates no pixels, and a service diffing
// segment after segment draws every diff image into memory already touched.
// A fresh buffer is memory the kernel maps page by page as it is first
// written: measured in go run ./bench -diff-only (issue 31), 390–900 page
// faults that made a 1280×720 comparison 2–3× slower (3.1 ms without them,
// 5–11 ms with) whenever the heap was growing, as it does after a tall page.
var pixPool sync.Pool // of *[]byte

// maxPooledPix bounds the buffers pixPool keeps: a segment's diff image
// fits (a 1280-px-wide band of 12,500 rows), a whole tall page's is left
// to the garbage collector rather than held between comparisons.
const maxPooledPix = 64 << 20

// pooledPix is a buffer of n bytes from pixPool when one is large enough,
// else a fresh one (uninitialized). Either way its bytes may hold anything.
func pooledPix(n int) []byte {
	if p, ok := pixPool.Get().(*[]byte); ok && cap(*p) >= n {
		pix := (*p)[:n]
		if pixFill != nil {
			pixFill(pix)
		}
		return pix
	}
	return uninitialized(n)
}

// recyclePix hands pix, a buffer no one reads any more, to pixPool.
func recyclePix(pix []byte) {
	if cap(pix) > 0 && cap(pix) <= maxPooledPix {
		pix = pix[:0]
		pixPool.Put(&pix)
	}
}

// release returns a pooled raster's buffer to pixPool; r must not be used
// after.
func (r raster) release() {
	if r.pooled {
		recyclePix(r.pix)
	}
}

// row returns the bytes of row y.
func (r raster) row(y int) []byte {
	off := y * r.stride
	return r.pix[off : off+4*r.w : off+4*r.w]
}

// toRaster gives img's pixels as straight-alpha RGBA bytes, sharing the
// image's memory when it already has that layout (NRGBA, or RGBA that is
// fully opaque, where premultiplied and straight alpha coincide) and
// converting once otherwise.
func toRaster(img image.Image) raster {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	switch m := img.(type) {
	case *image.NRGBA:
		return raster{pix: m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], stride: m.Stride, w: w, h: h}
	case *image.RGBA:
		if opaque(m.Pix, m.Stride, m.PixOffset(b.Min.X, b.Min.Y), w, h) {
			return raster{pix: m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], stride: m.Stride, w: w, h: h}
		}
	case *image.Paletted:
		return palettedRaster(m)
	case *image.Gray:
		return grayRaster(m)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(dst, dst.Rect, img, b.Min, draw.Src)
	return raster{pix: dst.Pix, stride: dst.Stride, w: w, h: h}
}

// toRasterLazy is toRaster without the opacity scan of an image.RGBA (a
// pass over all its bytes): its bytes are shared, marked unverified, and
// the comparison checks each row's alpha while the row is in cache.
func toRasterLazy(img image.Image) raster {
	if m, ok := img.(*image.RGBA); ok {
		b := m.Bounds()
		return raster{pix: m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], stride: m.Stride, w: b.Dx(), h: b.Dy(), unverified: true}
	}
	return toRaster(img)
}

// settle is r verified: as it is when every pixel is opaque, converted to
// straight alpha otherwise.
func (r raster) settle() raster {
	if !r.unverified {
		return r
	}
	r.unverified = false
	if r.h == 0 || r.w == 0 || opaque(r.pix, r.stride, 0, r.w, r.h) {
		return r
	}
	n := (r.h-1)*r.stride + 4*r.w
	return toRaster(&image.RGBA{Pix: r.pix[:n:n], Stride: r.stride, Rect: image.Rect(0, 0, r.w, r.h)})
}

// opaqueRow reports whether every alpha byte of an RGBA row is 255.
// Eight pixels are checked a step, their words ANDed together, with one
// branch at the end: rows are nearly always opaque.
func opaqueRow(row []byte) bool {
	const alphas = 0xff000000_ff000000
	and := uint64(alphas)
	le := binary.LittleEndian
	for len(row) >= 32 {
		and &= le.Uint64(row) & le.Uint64(row[8:]) & le.Uint64(row[16:]) & le.Uint64(row[24:])
		row = row[32:]
	}
	for len(row) >= 8 {
		and &= le.Uint64(row)
		row = row[8:]
	}
	return and&alphas == alphas && (len(row) < 4 || row[3] == 0xff)
}

// opaque reports whether every alpha byte of the w×h pixels at off is 255.
func opaque(pix []byte, stride, off, w, h int) bool {
	const alphas = 0xff000000_ff000000
	for y := range h {
		row := pix[off+y*stride : off+y*stride+4*w]
		for len(row) >= 8 {
			if binary.LittleEndian.Uint64(row)&alphas != alphas {
				return false
			}
			row = row[8:]
		}
		if len(row) == 4 && row[3] != 0xff {
			return false
		}
	}
	return true
}

// palettedRaster expands a paletted image through a straight-alpha copy of
// its palette (indices past the palette's end are transparent black, as
// image.Paletted.At reports them).
func palettedRaster(m *image.Paletted) raster {
	var lut [256]uint32
	for i, c := range m.Palette {
		n := color.NRGBAModel.Convert(c).(color.NRGBA)
		lut[i] = uint32(n.R) | uint32(n.G)<<8 | uint32(n.B)<<16 | uint32(n.A)<<24
	}
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	out := pooledPix(4 * w * h)
	for y := range h {
		src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
		expandRow(out[4*w*y:4*w*(y+1)], src, &lut)
	}
	return raster{pix: out, stride: 4 * w, w: w, h: h, pooled: true}
}

// expandRow writes the colours of palette indices src through lut into
// dst (4 bytes each), four pixels a loop.
func expandRow(dst, src []byte, lut *[256]uint32) {
	for len(src) >= 4 && len(dst) >= 16 {
		binary.LittleEndian.PutUint64(dst, uint64(lut[src[0]])|uint64(lut[src[1]])<<32)
		binary.LittleEndian.PutUint64(dst[8:], uint64(lut[src[2]])|uint64(lut[src[3]])<<32)
		src, dst = src[4:], dst[16:]
	}
	for len(src) >= 1 && len(dst) >= 4 {
		binary.LittleEndian.PutUint32(dst, lut[src[0]])
		src, dst = src[1:], dst[4:]
	}
}

// grayRaster expands a gray image (a grayscale PNG) to opaque RGBA.
func grayRaster(m *image.Gray) raster {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	out := pooledPix(4 * w * h)
	for y := range h {
		src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:w]
		dst := out[4*w*y : 4*w*(y+1)]
		for x, v := range src {
			binary.LittleEndian.PutUint32(dst[4*x:], grayWord(v))
		}
	}
	return raster{pix: out, stride: 4 * w, w: w, h: h, pooled: true}
}
