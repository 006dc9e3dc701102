package diff

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on amd64 and arm64.
const hugePage = 2 << 20

// adviseHugePages asks the kernel to back the whole 2 MiB pages inside buf
// with transparent huge pages (MADV_HUGEPAGE: heeded where THP is
// "madvise" or "always"). A page not yet touched, fresh from the
// kernel, then costs one fault (and one clear of 2 MiB) instead of 512, a
// difference of most of a tall page's full diff image time when its 100 MB
// are first touched; pages already present are left as they are. The
// advice stays on the address range when the image is freed, so the Go heap
// memory reused for later images faults in huge pages too. A 1280×720
// diff image (3.7 MB) holds one whole huge page most of the time: 390
// faults instead of 900 where its memory is fresh (as it is on every
// comparison while a large heap grows). An error is ignored: the advice
// changes speed, never contents.
func adviseHugePages(buf []byte) {
	if len(buf) < hugePage {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	lo := int((start+hugePage-1)&^(hugePage-1) - start)
	hi := lo + (len(buf)-lo)&^(hugePage-1)
	if hi > lo {
		_ = unix.Madvise(buf[lo:hi], unix.MADV_HUGEPAGE)
	}
}
