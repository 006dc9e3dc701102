package diff

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"reflect"
	"slices"
	"testing"
)

func TestRowHashesRoundTrip(t *testing.T) {
	t.Parallel()
	page := fixturePage(64, 50, 3)
	sigs, exact := RowHashes(page)
	blob := EncodeRowHashes(64, sigs, exact)
	if len(blob) != 13+16*50 {
		t.Fatalf("blob of %d bytes, want %d", len(blob), 13+16*50)
	}
	w, s2, e2, err := DecodeRowHashes(blob)
	if err != nil || w != 64 || !slices.Equal(s2, sigs) || !slices.Equal(e2, exact) {
		t.Fatalf("decoded %d, %v, %v (err %v), want the encoded hashes", w, len(s2), len(e2), err)
	}
	if !slices.Equal(sigs, RowSignatures(page)) {
		t.Fatal("RowHashes' signatures differ from RowSignatures'")
	}
	for _, bad := range [][]byte{nil, blob[:12], blob[:len(blob)-1], append(slices.Clone(blob), 0),
		append([]byte("SQRX"), blob[4:]...), append([]byte("SQRH\x02"), blob[5:]...)} {
		if _, _, _, err := DecodeRowHashes(bad); !errors.Is(err, ErrRowHashes) {
			t.Fatalf("blob of %d bytes: err %v, want ErrRowHashes", len(bad), err)
		}
	}
	huge := EncodeRowHashes(1, nil, nil)
	huge[9], huge[10], huge[11] = 0xff, 0xff, 0xff // 16 M rows claimed
	if _, _, _, err := DecodeRowHashes(huge); !errors.Is(err, ErrRowHashes) {
		t.Fatalf("16 M rows claimed: err %v, want ErrRowHashes", err)
	}
}

// The exact hash tells apart rows the quantised signature does not.
func TestRowExactSeesSubRowChange(t *testing.T) {
	t.Parallel()
	a := []byte{200, 200, 200, 255, 10, 10, 10, 255}
	b := []byte{201, 200, 200, 255, 10, 10, 10, 255}
	if RowSignature(a) != RowSignature(b) {
		t.Fatal("a one-level change moved the quantised signature")
	}
	if RowExact(a) == RowExact(b) {
		t.Fatal("a one-level change kept the exact hash")
	}
}

// manifestOf describes segments as a capture records them, decoding
// (counted in *loads) only when asked.
func manifestOf(segs []image.Image, loads *int) []PageSegment {
	out := make([]PageSegment, len(segs))
	for i, img := range segs {
		sigs, exact := RowHashes(img)
		sz := img.Bounds().Size()
		out[i] = PageSegment{Width: sz.X, Height: sz.Y, Sigs: sigs, Exact: exact,
			Load: func() (image.Image, error) { *loads++; return img, nil }}
	}
	return out
}

// Alignment and counts from the recorded manifests equal those from the
// decoded images, for an insertion, a removal and a change in a shifted
// region; a pure shift decodes only the segment holding the inserted rows
// (for its diff image), and a sub-row change is still found.
func TestComparePageSegmentsEqualsComparePages(t *testing.T) {
	t.Parallel()
	base := fixturePage(320, 8000, 5)
	changed := withRows(base, 500, 37, color.NRGBA{30, 90, 200, 255})
	changed.Pix[changed.PixOffset(100, 5000+5)] ^= 0x03 // below the quantisation
	for _, c := range []struct {
		name          string
		cur           *image.NRGBA
		masks         []image.Rectangle
		decoded, diff int // decoded segments for the counts, then for every diff image
	}{
		{"inserted", withRows(base, 500, 37, color.NRGBA{30, 90, 200, 255}), nil, 0, 1},
		{"removed", withoutRows(base, 1000, 50), nil, 0, 1},
		{"inserted, masked", withRows(base, 500, 37, color.NRGBA{30, 90, 200, 255}), []image.Rectangle{image.Rect(0, 2000, 50, 2100)}, 0, 1},
		{"sub-row change", changed, nil, 2, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			sa, sb := segmentsOf(base, 720), segmentsOf(c.cur, 720)
			o := PageOptions{MaskA: c.masks}
			want, err := ComparePages(sa, sb, o)
			if err != nil {
				t.Fatal(err)
			}
			loads := 0
			got, err := ComparePageSegments(manifestOf(sa, &loads), manifestOf(sb, &loads), o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Hunks, want.Hunks) || !reflect.DeepEqual(got.Segments, want.Segments) ||
				!reflect.DeepEqual(got.SegmentsA, want.SegmentsA) {
				t.Fatalf("from manifests: %v %+v\nfrom images: %v %+v", got.Hunks, got.Segments, want.Hunks, want.Segments)
			}
			if loads != c.decoded || got.Decoded() != c.decoded {
				t.Fatalf("counts decoded %d segments (Decoded %d), want %d", loads, got.Decoded(), c.decoded)
			}
			for i, s := range want.Segments {
				if s.DiffPixels == 0 {
					continue
				}
				g, err := got.RenderSegmentDiff(i)
				if err != nil {
					t.Fatal(err)
				}
				if w := want.SegmentDiff(i); !bytes.Equal(g.Pix, w.Pix) {
					t.Fatalf("diff image of segment %d differs", i+1)
				}
			}
			if loads != c.diff {
				t.Fatalf("decoded %d segments with the diff images, want %d", loads, c.diff)
			}
		})
	}
}

func TestComparePageSegmentsBadManifest(t *testing.T) {
	t.Parallel()
	segs := segmentsOf(fixturePage(40, 100, 1), 30)
	loads := 0
	m := manifestOf(segs, &loads)
	short := slices.Clone(m)
	short[1].Sigs = short[1].Sigs[:5]
	if _, err := ComparePageSegments(m, short, PageOptions{}); !errors.Is(err, ErrRowHashes) {
		t.Fatalf("short signatures: err %v, want ErrRowHashes", err)
	}
	failing := slices.Clone(m)
	failing[2].Exact = nil
	failing[2].Sigs = slices.Clone(failing[2].Sigs)
	failing[2].Sigs[0]++ // a changed row: segment 3 must be decoded
	boom := errors.New("gone")
	failing[2].Load = func() (image.Image, error) { return nil, boom }
	if _, err := ComparePageSegments(m, failing, PageOptions{}); !errors.Is(err, boom) {
		t.Fatalf("failing load: err %v, want it", err)
	}
}
