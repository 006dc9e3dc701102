package diff

import (
	"image"
	"strings"
	"unsafe"
)

// newDiffImage is an NRGBA image of r for Compare's diff image, its bytes
// not zeroed: the comparison writes every pixel of every row (faded,
// painted over, outside one image or masked), so zeroing them first
// (image.NewNRGBA) would be a pass over the whole image for nothing: on a
// tall page 100 MB of stores and, once they are evicted, as many reads
// again when the rows are drawn. TestDiffImageWritesEveryByte fills the
// bytes with garbage first (pixFill) and checks that none is left.
func newDiffImage(r image.Rectangle) *image.NRGBA {
	w, h := r.Dx(), r.Dy()
	return &image.NRGBA{Pix: pooledPix(4 * w * h), Stride: 4 * w, Rect: r}
}

// pixFill, when set (tests only, never concurrently with a comparison),
// fills the bytes of every buffer uninitialized or pooledPix returns.
var pixFill func([]byte)

// uninitialized returns n bytes of ordinary Go memory that may hold any
// values. A strings.Builder grows its buffer without zeroing it (Grow
// guarantees the capacity); the one byte written gives the buffer's
// address, and the slice spans the n bytes of that capacity. Nothing keeps
// the string: the bytes are the slice's alone. Large buffers are advised
// to the kernel as huge-page memory before they are first touched
// (adviseHugePages).
func uninitialized(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(0)
	s := b.String()
	pix := unsafe.Slice(unsafe.StringData(s), n)
	adviseHugePages(pix)
	if pixFill != nil {
		pixFill(pix)
	}
	return pix
}
