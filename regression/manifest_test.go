package regression

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"reflect"
	"testing"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
)

// hashedRepo is a compareRepo that keeps the row hashes its segments were
// captured with, computed here from the stored PNGs.
type hashedRepo struct {
	*compareRepo
	hashes map[string][]byte
}

func (r *hashedRepo) RowHashes(_ context.Context, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, id := range ids {
		if b, ok := r.hashes[id]; ok {
			out[id] = b
		}
	}
	return out, nil
}

func hashesOf(t *testing.T, blobs memBlobs, arts []*jobs.Artifact, into map[string][]byte) {
	t.Helper()
	for _, a := range arts {
		img, err := png.Decode(bytes.NewReader(blobs[a.ObjectKey]))
		if err != nil {
			t.Fatal(err)
		}
		sigs, exact := diff.RowHashes(img)
		into[a.ID] = diff.EncodeRowHashes(a.Width, sigs, exact)
	}
}

// countingBlobs counts the reads of screenshot segments.
type countingBlobs struct {
	memBlobs
	gets int
}

func (c *countingBlobs) Get(ctx context.Context, key string) ([]byte, artifacts.Object, error) {
	c.gets++
	return c.memBlobs.Get(ctx, key)
}

// With the segments' manifests the comparison says what it says from the
// decoded images, and decodes only the segment holding the inserted rows
// (for its diff image); a change below the signatures' quantisation in a
// shifted region is still found.
func TestComparerAlignedFromManifests(t *testing.T) {
	for _, subRow := range []bool{false, true} {
		blobs := memBlobs{}
		base := inkedPage(100, 800, 1)
		cur := insertRows(base, 50, 12, color.NRGBA{30, 90, 200, 255})
		if subRow {
			cur.Pix[cur.PixOffset(30, 612)] ^= 0x02 // segment 8, a blank row, two levels: the same signature
		}
		baseArts := segmentArtifacts(t, blobs, "base", base, 80)
		curArts := segmentArtifacts(t, blobs, "home-100x80", cur, 80)
		// Pixel threshold 0: exact colours, every changed pixel counts.
		plain := &compareRepo{run: &Run{ID: "r", SuiteID: "s"}, key: CaptureKey{Target: "home", Viewport: "100x80"}, job: segmentsJob(),
			arts: curArts, bases: baselinesOf(baseArts)}
		if err := (&Comparer{Repo: plain, Store: blobs, Logger: quiet}).Compare(context.Background(), "j"); err != nil {
			t.Fatal(err)
		}

		hashed := &hashedRepo{compareRepo: &compareRepo{run: plain.run, key: plain.key, job: segmentsJob(), arts: curArts,
			bases: baselinesOf(baseArts)}, hashes: map[string][]byte{}}
		hashesOf(t, blobs, baseArts, hashed.hashes)
		hashesOf(t, blobs, curArts, hashed.hashes)
		counting := &countingBlobs{memBlobs: blobs}
		decoded := 0
		c := &Comparer{Repo: hashed, Store: counting, Logger: quiet, Decoded: func(n int) { decoded += n }}
		if err := c.Compare(context.Background(), "j"); err != nil {
			t.Fatal(err)
		}
		want, got := bySegment(plain.recorded), bySegment(hashed.recorded)
		if len(got) != 11 || len(want) != 11 {
			t.Fatalf("%d and %d comparisons, want 11", len(got), len(want))
		}
		for seg := 1; seg <= 11; seg++ {
			g, w := got[seg], want[seg]
			if g.Status != w.Status || g.Message != w.Message || g.ShiftedPx != w.ShiftedPx || g.DiffPixels != w.DiffPixels ||
				!reflect.DeepEqual(g.Hunks, w.Hunks) || (g.DiffArtifact == nil) != (w.DiffArtifact == nil) {
				t.Fatalf("sub-row %v, segment %d from manifests: %s %q %d px\nfrom images: %s %q %d px",
					subRow, seg, g.Status, g.Message, g.DiffPixels, w.Status, w.Message, w.DiffPixels)
			}
		}
		wantDecoded := 1 // segment 1's diff image
		if subRow {
			if got[8].Status != CompareFailed || got[8].DiffPixels != 1 {
				t.Fatalf("segment 8 with a one-level change: %s, %d px", got[8].Status, got[8].DiffPixels)
			}
			wantDecoded = 1 + 2 // and both pages' segments holding the row (its diff image needs no more)
		}
		if decoded != wantDecoded || counting.gets != wantDecoded {
			t.Fatalf("sub-row %v: %d segments decoded (%d read), want %d (of 21)", subRow, decoded, counting.gets, wantDecoded)
		}
	}
}
