package diff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
)

// RowSignature is the quantised signature of one row of straight-alpha RGBA
// bytes (4 per pixel), the one Align matches rows by: a capture computes it
// from the rows it cuts, a comparison from the rows it decodes.
func RowSignature(row []byte) uint64 { return rowSignature(row) }

// RowExact hashes one row of RGBA bytes exactly (FNV-1a over 64-bit words,
// nothing quantised, then a final mix): two rows with the same exact hash
// have, but for a 2⁻⁶⁴ collision, the same bytes, so the pixel diff would
// find nothing in them.
func RowExact(row []byte) uint64 {
	h := uint64(14695981039346656037) ^ uint64(len(row))
	for len(row) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(row)) * 1099511628211
		row = row[8:]
	}
	if len(row) == 4 {
		h = (h ^ uint64(binary.LittleEndian.Uint32(row))) * 1099511628211
	}
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// RowHashes returns RowSignature and RowExact of every row of img (as
// ComparePages reads it: straight-alpha RGBA).
func RowHashes(img image.Image) (sigs, exact []uint64) {
	r := toRaster(img)
	sigs, exact = make([]uint64, r.h), make([]uint64, r.h)
	for y := range r.h {
		row := r.row(y)
		sigs[y], exact[y] = rowSignature(row), RowExact(row)
	}
	return sigs, exact
}

// Row hash blobs: the encoding of a segment's row hashes stored with a
// capture (EncodeRowHashes).
const (
	rowHashMagic   = "SQRH"
	rowHashVersion = 1
	rowHashHeader  = len(rowHashMagic) + 1 + 4 + 4
	// MaxRowHashRows bounds a decoded blob: a segment is at most one
	// capture band (16,000 device px), a page at most 100,000 px.
	MaxRowHashRows = 100000
)

// ErrRowHashes is returned by DecodeRowHashes for a blob that is not one.
var ErrRowHashes = errors.New("diff: bad row hash blob")

// EncodeRowHashes encodes the row hashes of a segment width px wide: "SQRH",
// version 1, width and row count (uint32 little-endian), then every row's
// signature and every row's exact hash (uint64 little-endian): 16 bytes a
// row plus 13. sigs and exact must have one entry per row.
func EncodeRowHashes(width int, sigs, exact []uint64) []byte {
	n := len(sigs)
	out := make([]byte, rowHashHeader+16*n)
	copy(out, rowHashMagic)
	out[4] = rowHashVersion
	binary.LittleEndian.PutUint32(out[5:], uint32(width))
	binary.LittleEndian.PutUint32(out[9:], uint32(n))
	p := out[rowHashHeader:]
	for i, s := range sigs {
		binary.LittleEndian.PutUint64(p[8*i:], s)
		binary.LittleEndian.PutUint64(p[8*(n+i):], exact[i])
	}
	return out
}

// DecodeRowHashes decodes EncodeRowHashes' blob; ErrRowHashes when b is
// not one (wrong magic or version, a size that disagrees with its row
// count, more than MaxRowHashRows rows).
func DecodeRowHashes(b []byte) (width int, sigs, exact []uint64, err error) {
	if len(b) < rowHashHeader || string(b[:4]) != rowHashMagic || b[4] != rowHashVersion {
		return 0, nil, nil, fmt.Errorf("%w: no header", ErrRowHashes)
	}
	w, n := binary.LittleEndian.Uint32(b[5:]), binary.LittleEndian.Uint32(b[9:])
	if n > MaxRowHashRows || len(b) != rowHashHeader+16*int(n) {
		return 0, nil, nil, fmt.Errorf("%w: %d rows in %d bytes", ErrRowHashes, n, len(b))
	}
	p := b[rowHashHeader:]
	sigs, exact = make([]uint64, n), make([]uint64, n)
	for i := range int(n) {
		sigs[i] = binary.LittleEndian.Uint64(p[8*i:])
		exact[i] = binary.LittleEndian.Uint64(p[8*(int(n)+i):])
	}
	return int(w), sigs, exact, nil
}
