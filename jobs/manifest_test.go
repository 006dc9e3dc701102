package jobs

import (
	"testing"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
)

// Segments with row hashes give a manifest with their offsets and sha256,
// and an artifact blob that decodes to the hashes; without any, none.
func TestManifest(t *testing.T) {
	imgs := []capture.Image{
		{Name: "p-001.png", Index: 1, Width: 2, Height: 2, RowSigs: []uint64{1, 2}, RowExact: []uint64{3, 4}},
		{Name: "p-002.png", Index: 2, Width: 2, Height: 1, Y: 2, YCSS: 1},
	}
	arts := []*Artifact{{Seq: 1, Name: "p-001.png", SHA256: "a"}, {Seq: 2, Name: "p-002.png", SHA256: "b"}}
	arts[0].RowHashes = diff.EncodeRowHashes(2, imgs[0].RowSigs, imgs[0].RowExact)
	m := manifest(imgs, arts)
	if m == nil || len(m.Segments) != 2 {
		t.Fatalf("manifest %+v, want two segments", m)
	}
	if s := m.Segments[1]; s != (ManifestSegment{Seq: 2, Name: "p-002.png", Y: 2, YCSS: 1, Width: 2, Height: 1, SHA256: "b"}) {
		t.Fatalf("segment 2: %+v", s)
	}
	if s := m.Segments[0]; s.Rows != 2 || s.SHA256 != "a" || s.Y != 0 {
		t.Fatalf("segment 1: %+v", s)
	}
	arts[0].RowHashes = nil
	if m := manifest(imgs, arts); m != nil {
		t.Fatalf("no row hashes: manifest %+v, want none", m)
	}
}
