package diff

import (
	"image"
	"strings"
	"sync"
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
	return &image.NRGBA{Pix: diffPix(4 * w * h), Stride: 4 * w, Rect: r}
}

// diffPool holds the buffers of diff images handed back by Result.Release
// (and of comparisons started over): a service diffing segment after
// segment then draws every diff image into memory already touched. A fresh
// buffer is memory the kernel maps page by page as it is first written:
// measured in go run ./bench -diff-only (issue 31), 390–900 page faults
// that made a 1280×720 comparison 2–3× slower (3.1 ms without them, 5–11
// ms with) whenever the heap was growing, as it does after a tall page.
var diffPool sync.Pool // of *[]byte

// maxPooledDiff bounds the buffers diffPool keeps: a segment's diff image
// fits (a 1280-px-wide band of 12,500 rows), a whole tall page's is left
// to the garbage collector rather than held between comparisons.
const maxPooledDiff = 64 << 20

// diffPix is n bytes for a diff image: a pooled buffer when one is large
// enough, else fresh (uninitialized). Either way its bytes may hold
// anything; the comparison writes every one.
func diffPix(n int) []byte {
	if p, ok := diffPool.Get().(*[]byte); ok && cap(*p) >= n {
		pix := (*p)[:n]
		if pixFill != nil {
			pixFill(pix)
		}
		return pix
	}
	return uninitialized(n)
}

// recycleDiff hands pix, a diff image's buffer no one reads any more, to
// diffPool.
func recycleDiff(pix []byte) {
	if cap(pix) > 0 && cap(pix) <= maxPooledDiff {
		pix = pix[:0]
		diffPool.Put(&pix)
	}
}

// pixFill, when set (tests only, never concurrently with a comparison),
// fills the bytes uninitialized returns.
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
