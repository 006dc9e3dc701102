package capture

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"slices"
	"testing"

	"github.com/snapq/snapq/capture/internal/pngcut"
	snapdiff "github.com/snapq/snapq/diff"
)

// The row hashes recorded while cutting are those a comparison computes from
// the decoded segments, for RGB (Chromium's) and RGBA PNGs.
func TestRowHasherMatchesDecodedPieces(t *testing.T) {
	t.Parallel()
	for _, translucent := range []bool{false, true} {
		src := image.NewNRGBA(image.Rect(0, 0, 37, 100))
		for y := range 100 {
			for x := range 37 {
				a := byte(255)
				if translucent && (x+y)%3 == 0 {
					a = byte(x * 6)
				}
				src.SetNRGBA(x, y, color.NRGBA{byte(x * y), byte(3 * y), byte(x), a})
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, src); err != nil {
			t.Fatal(err)
		}
		cuts := []pngcut.Range{{Y0: 0, Y1: 40}, {Y0: 40, Y1: 80}, {Y0: 80, Y1: 100}}
		hs := newRowHasher(37, cuts)
		pieces, err := pngcut.CutRows(buf.Bytes(), cuts, hs.row)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range pieces {
			img, err := png.Decode(bytes.NewReader(p))
			if err != nil {
				t.Fatal(err)
			}
			sigs, exact := snapdiff.RowHashes(img)
			if !slices.Equal(hs.sigs[i], sigs) || !slices.Equal(hs.exact[i], exact) {
				t.Fatalf("translucent %v, piece %d: recorded hashes differ from the decoded piece's (%d and %d rows)",
					translucent, i, len(hs.sigs[i]), len(sigs))
			}
		}
	}
}
