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
// the decoded segments, for RGB (Chromium's) and RGBA PNGs; so is blank's
// colour sample (on pieces wide and tall enough for its grid to skip pixels), and so is
// the first piece's preview (thumbnail.Scaler over its rows).
func TestRowHasherMatchesDecodedPieces(t *testing.T) {
	t.Parallel()
	for _, translucent := range []bool{false, true} {
		const w, h = 301, 900
		src := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
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
		cuts := []pngcut.Range{{Y0: 0, Y1: 400}, {Y0: 400, Y1: 863}, {Y0: 863, Y1: 900}}
		hs := newRowHasher(w, cuts, true)
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
			if want := sampleImage(img); hs.colours[i] != *want {
				t.Fatalf("translucent %v, piece %d: the colour sample counted while cutting differs from the decoded piece's", translucent, i)
			}
			if i == 0 {
				got, want := hs.preview.Image(), previewOf(img)
				if got == nil || want == nil || got.Rect != want.Rect || !bytes.Equal(got.Pix, want.Pix) {
					t.Fatalf("translucent %v: the preview made while cutting differs from the decoded first piece's", translucent)
				}
			}
		}
	}
}
