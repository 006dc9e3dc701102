package pngcut

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zlib"
	"hash/crc32"
	"io"
)

// ErrUnsupported is returned (wrapped) for a valid PNG layout the cutter does not handle
// (interlaced, palette, grey, 16-bit, ...): the caller decodes and re-encodes instead. Any
// other error means the data is damaged or the ranges are invalid.
var ErrUnsupported = errors.New("png layout not supported by the row cutter")

// Range is a half-open range of image rows [Y0, Y1).
type Range struct{ Y0, Y1 int }

// cutDeflateLevel is the zlib level pieces are deflated at.
const cutDeflateLevel = zlib.BestSpeed

const (
	pngSignature = "\x89PNG\r\n\x1a\n"
	// maxIDATLen bounds one written IDAT chunk (the format allows up to 2^31-1 bytes).
	maxIDATLen = 1 << 30
	// maxCutRowBytes bounds a row so a hostile header cannot make us allocate gigabytes.
	maxCutRowBytes = 1 << 26
)

// pngSource is a parsed source PNG.
type pngSource struct {
	ihdr   []byte   // the 13 bytes of IHDR data
	width  int      // px
	height int      // rows
	bpp    int      // bytes per pixel: 3 or 4
	keep   [][]byte // whole chunks (length, type, data, CRC) copied into every piece
	idat   [][]byte // the data of each IDAT chunk, in order
	zlen   int      // total IDAT data bytes
}

// Cut cuts src into one PNG per range of cuts (ascending, non-overlapping, non-empty, within
// the image). It returns an error wrapping ErrUnsupported when src is a valid PNG it
// does not handle, and another error when src is damaged or cuts are invalid.
func Cut(src []byte, cuts []Range) ([][]byte, error) {
	return cutLevel(src, cuts, cutDeflateLevel, nil)
}

// RowFunc receives row y of the source (inside one of the cuts), unfiltered: width×bpp bytes,
// RGB (bpp 3) or RGBA (bpp 4, straight alpha), valid only during the call.
type RowFunc func(y int, row []byte, bpp int)

// CutRows is Cut that also hands every row of the cuts, unfiltered, to rows: what the cutter
// has anyway, so a caller can hash the pieces' rows without decoding them.
func CutRows(src []byte, cuts []Range, rows RowFunc) ([][]byte, error) {
	return cutLevel(src, cuts, cutDeflateLevel, rows)
}

// cutLevel is Cut deflating pieces at zlib level, handing rows to rows when not nil.
func cutLevel(src []byte, cuts []Range, level int, rows RowFunc) ([][]byte, error) {
	s, err := parse(src)
	if err != nil {
		return nil, err
	}
	if err := checkCuts(cuts, s.height); err != nil {
		return nil, err
	}
	if len(cuts) == 0 {
		return nil, nil
	}
	fr, err := s.inflate()
	if err != nil {
		return nil, err
	}
	defer fr.Close()
	return s.cut(fr, cuts, level, rows)
}

// checkCuts checks that cuts are ascending, non-overlapping, non-empty and within height rows.
func checkCuts(cuts []Range, height int) error {
	prevEnd := 0
	for i, c := range cuts {
		if c.Y0 < prevEnd || c.Y1 <= c.Y0 || c.Y1 > height {
			return fmt.Errorf("png cut: range %d [%d,%d) is empty, out of order or outside the %d rows", i, c.Y0, c.Y1, height)
		}
		prevEnd = c.Y1
	}
	return nil
}

// inflate checks the zlib header of the image data and returns a reader of the filtered rows.
func (s *pngSource) inflate() (io.ReadCloser, error) {
	z := s.idatReader()
	var hdr [2]byte
	if _, err := io.ReadFull(z, hdr[:]); err != nil {
		return nil, fmt.Errorf("png cut: zlib header: %w", noEOF(err))
	}
	if hdr[0]&0x0f != 8 || hdr[0]>>4 > 7 || hdr[1]&0x20 != 0 || (uint(hdr[0])<<8|uint(hdr[1]))%31 != 0 {
		return nil, errors.New("png cut: bad zlib header")
	}
	return flate.NewReader(z), nil
}

// cut reads the filtered rows from fr up to the last cut and writes one PNG per cut: its
// first row unfiltered (filter None), the others copied as filtered in the source.
func (s *pngSource) cut(fr io.Reader, cuts []Range, level int, rows RowFunc) ([][]byte, error) {
	stride := 1 + s.width*s.bpp
	cur := make([]byte, stride)  // the row being read, filtered then unfiltered in place
	prev := make([]byte, stride) // the previous row, unfiltered (zero above row 0)
	zw, err := zlib.NewWriterLevel(io.Discard, level)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(cuts))
	var w idatWriter
	k := 0 // the range being written or awaited
	for y := 0; k < len(cuts); y++ {
		if _, err := io.ReadFull(fr, cur); err != nil {
			return nil, fmt.Errorf("png cut: row %d: %w", y, noEOF(err))
		}
		c := cuts[k]
		if y > c.Y0 {
			zw.Write(cur) // filtered as in the source; the compressor copies it
		} else if y == c.Y0 {
			w.begin(s, c.Y1-c.Y0)
			zw.Reset(&w)
		}
		if err := unfilterRow(cur, prev, s.bpp); err != nil {
			return nil, fmt.Errorf("png cut: row %d: %w", y, err)
		}
		if y == c.Y0 {
			cur[0] = 0 // filter None over the unfiltered bytes
			zw.Write(cur)
		}
		if rows != nil && y >= c.Y0 {
			rows(y, cur[1:], s.bpp)
		}
		if y == c.Y1-1 {
			if err := zw.Close(); err != nil {
				return nil, err
			}
			out = append(out, w.end())
			k++
		}
		prev, cur = cur, prev
	}
	return out, nil
}

// parse checks the chunk stream of src (signature, CRCs, IHDR first, consecutive
// IDATs, IEND) and returns what Cut needs.
func parse(src []byte) (*pngSource, error) {
	if len(src) < len(pngSignature) || string(src[:len(pngSignature)]) != pngSignature {
		return nil, errors.New("png cut: not a PNG")
	}
	s := &pngSource{}
	pos := len(pngSignature)
	idatDone := false
	for n := 0; ; n++ {
		if len(src)-pos < 12 {
			return nil, errors.New("png cut: truncated chunk stream")
		}
		length := binary.BigEndian.Uint32(src[pos:])
		if length > 1<<31-1 || uint64(length) > uint64(len(src)-pos-12) {
			return nil, errors.New("png cut: truncated chunk")
		}
		end := pos + 12 + int(length)
		typ := string(src[pos+4 : pos+8])
		data := src[pos+8 : end-4]
		if crc32.ChecksumIEEE(src[pos+4:end-4]) != binary.BigEndian.Uint32(src[end-4:]) {
			return nil, fmt.Errorf("png cut: bad CRC in chunk %q", typ)
		}
		if n == 0 && typ != "IHDR" {
			return nil, errors.New("png cut: IHDR is not the first chunk")
		}
		if s.idat != nil && typ != "IDAT" {
			idatDone = true
		}
		switch typ {
		case "IHDR":
			if n != 0 {
				return nil, errors.New("png cut: second IHDR")
			}
			if err := s.header(data); err != nil {
				return nil, err
			}
		case "IDAT":
			if idatDone {
				return nil, errors.New("png cut: IDAT chunks are not consecutive")
			}
			s.idat = append(s.idat, data)
			s.zlen += len(data)
		case "IEND":
			if s.idat == nil {
				return nil, errors.New("png cut: no IDAT")
			}
			return s, nil
		case "sRGB", "gAMA", "cHRM", "iCCP":
			if s.idat == nil {
				s.keep = append(s.keep, src[pos:end])
			}
		case "PLTE":
			// A suggested palette is allowed for truecolour images and not needed.
		default:
			if typ[0]&0x20 == 0 { // an unknown critical chunk
				return nil, fmt.Errorf("%w: critical chunk %q", ErrUnsupported, typ)
			}
		}
		pos = end
	}
}

// header reads IHDR data.
func (s *pngSource) header(d []byte) error {
	if len(d) != 13 {
		return errors.New("png cut: bad IHDR length")
	}
	w, h := binary.BigEndian.Uint32(d[0:]), binary.BigEndian.Uint32(d[4:])
	depth, ctype, comp, filt, inter := d[8], d[9], d[10], d[11], d[12]
	if w == 0 || h == 0 || w > 1<<31-1 || h > 1<<31-1 || comp != 0 || filt != 0 || inter > 1 {
		return errors.New("png cut: bad IHDR")
	}
	switch {
	case depth != 8:
		return fmt.Errorf("%w: bit depth %d", ErrUnsupported, depth)
	case inter != 0:
		return fmt.Errorf("%w: interlaced", ErrUnsupported)
	case ctype == 2:
		s.bpp = 3
	case ctype == 6:
		s.bpp = 4
	default:
		return fmt.Errorf("%w: color type %d", ErrUnsupported, ctype)
	}
	if uint64(w)*uint64(s.bpp) > maxCutRowBytes {
		return fmt.Errorf("%w: %d px wide", ErrUnsupported, w)
	}
	s.ihdr, s.width, s.height = d, int(w), int(h)
	return nil
}

// noEOF turns a premature end of the deflate stream into an error that says so.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// idatReader reads the concatenated IDAT data (an io.ByteReader, so flate does not buffer it).
type idatReader struct {
	chunks [][]byte
	cur    []byte
}

func (s *pngSource) idatReader() *idatReader { return &idatReader{chunks: s.idat} }

func (r *idatReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if len(r.chunks) == 0 {
			return 0, io.EOF
		}
		r.cur, r.chunks = r.chunks[0], r.chunks[1:]
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func (r *idatReader) ReadByte() (byte, error) {
	for len(r.cur) == 0 {
		if len(r.chunks) == 0 {
			return 0, io.EOF
		}
		r.cur, r.chunks = r.chunks[0], r.chunks[1:]
	}
	b := r.cur[0]
	r.cur = r.cur[1:]
	return b, nil
}

// idatWriter builds one piece: it appends what the zlib writer emits to IDAT chunks.
type idatWriter struct {
	buf   []byte
	chunk int // offset of the open IDAT chunk's length field, -1 if none is open
}

// begin starts a piece of rows rows: signature, IHDR, kept chunks.
func (w *idatWriter) begin(s *pngSource, rows int) {
	// Size guess: the source's compressed bytes per row, plus room for the first row.
	w.buf = make([]byte, 0, 256+s.zlen/s.height*rows*9/8+s.width*s.bpp)
	w.buf = append(w.buf, pngSignature...)
	var ihdr [13]byte
	copy(ihdr[:], s.ihdr)
	binary.BigEndian.PutUint32(ihdr[4:], uint32(rows))
	w.buf = appendChunk(w.buf, "IHDR", ihdr[:])
	for _, c := range s.keep {
		w.buf = append(w.buf, c...)
	}
	w.chunk = -1
}

func (w *idatWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if w.chunk < 0 {
			w.chunk = len(w.buf)
			w.buf = append(w.buf, 0, 0, 0, 0, 'I', 'D', 'A', 'T')
		}
		k := min(len(p), maxIDATLen-(len(w.buf)-w.chunk-8))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf)-w.chunk-8 == maxIDATLen {
			w.closeChunk()
		}
	}
	return n, nil
}

func (w *idatWriter) closeChunk() {
	if w.chunk < 0 {
		return
	}
	binary.BigEndian.PutUint32(w.buf[w.chunk:], uint32(len(w.buf)-w.chunk-8))
	w.buf = binary.BigEndian.AppendUint32(w.buf, crc32.ChecksumIEEE(w.buf[w.chunk+4:]))
	w.chunk = -1
}

// end closes the piece and returns it.
func (w *idatWriter) end() []byte {
	w.closeChunk()
	w.buf = appendChunk(w.buf, "IEND", nil)
	b := w.buf
	*w = idatWriter{chunk: -1}
	return b
}

func appendChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

var errBadFilter = errors.New("bad filter type")

// unfilterRow undoes the filter of cur (filter byte first) in place; prev is the previous row
// unfiltered (zero above the first row). bpp is 3 or 4.
func unfilterRow(cur, prev []byte, bpp int) error {
	c, p := cur[1:], prev[1:len(cur)]
	switch cur[0] {
	case 0:
	case 1:
		if bpp == 4 {
			unSub4(c)
		} else {
			unSubN(c, bpp)
		}
	case 2:
		unUp(c, p)
	case 3:
		if bpp == 4 {
			unAvg4(c, p)
		} else {
			unAvgN(c, p, bpp)
		}
	case 4:
		if bpp == 4 {
			unPaeth4(c, p)
		} else {
			unPaethN(c, p, bpp)
		}
	default:
		return fmt.Errorf("%w %d", errBadFilter, cur[0])
	}
	return nil
}

// addBytes8 adds the 8 bytes of a and b pairwise, modulo 256.
func addBytes8(a, b uint64) uint64 {
	const lo, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	return (a&lo + b&lo) ^ ((a ^ b) & hi)
}

// addBytes4 adds the 4 bytes of a and b pairwise, modulo 256.
func addBytes4(a, b uint32) uint32 {
	const lo, hi = 0x7f7f7f7f, 0x80808080
	return (a&lo + b&lo) ^ ((a ^ b) & hi)
}

func unUp(c, p []byte) {
	p = p[:len(c)]
	i := 0
	for ; i+8 <= len(c); i += 8 {
		binary.LittleEndian.PutUint64(c[i:], addBytes8(binary.LittleEndian.Uint64(c[i:]), binary.LittleEndian.Uint64(p[i:])))
	}
	for ; i < len(c); i++ {
		c[i] += p[i]
	}
}

func unSub4(c []byte) {
	var left uint32
	for i := 0; i+4 <= len(c); i += 4 {
		left = addBytes4(binary.LittleEndian.Uint32(c[i:]), left)
		binary.LittleEndian.PutUint32(c[i:], left)
	}
}

func unSubN(c []byte, bpp int) {
	for i := bpp; i < len(c); i++ {
		c[i] += c[i-bpp]
	}
}

func unAvg4(c, p []byte) {
	p = p[:len(c)]
	var a0, a1, a2, a3 byte
	for i := 0; i+4 <= len(c); i += 4 {
		cc, pp := c[i:i+4:i+4], p[i:i+4:i+4]
		a0 = cc[0] + byte((uint(a0)+uint(pp[0]))>>1)
		a1 = cc[1] + byte((uint(a1)+uint(pp[1]))>>1)
		a2 = cc[2] + byte((uint(a2)+uint(pp[2]))>>1)
		a3 = cc[3] + byte((uint(a3)+uint(pp[3]))>>1)
		cc[0], cc[1], cc[2], cc[3] = a0, a1, a2, a3
	}
}

func unAvgN(c, p []byte, bpp int) {
	p = p[:len(c)]
	for i := 0; i < bpp && i < len(c); i++ {
		c[i] += p[i] >> 1
	}
	for i := bpp; i < len(c); i++ {
		c[i] += byte((uint(c[i-bpp]) + uint(p[i])) >> 1)
	}
}

// paethPred is the Paeth predictor of left a, up b and upper-left c.
func paethPred(a, b, c int) int {
	pa := b - c // |p-a| with p = a+b-c
	pb := a - c // |p-b|
	pc := pa + pb
	pa = absInt(pa)
	pb = absInt(pb)
	pc = absInt(pc)
	if pa <= pb && pa <= pc {
		return a
	}
	if pb <= pc {
		return b
	}
	return c
}

func absInt(x int) int {
	m := x >> 63
	return (x ^ m) - m
}

func unPaeth4(c, p []byte) {
	p = p[:len(c)]
	var a0, a1, a2, a3, c0, c1, c2, c3 int
	for i := 0; i+4 <= len(c); i += 4 {
		cc, pp := c[i:i+4:i+4], p[i:i+4:i+4]
		b0, b1, b2, b3 := int(pp[0]), int(pp[1]), int(pp[2]), int(pp[3])
		a0 = (paethPred(a0, b0, c0) + int(cc[0])) & 0xff
		a1 = (paethPred(a1, b1, c1) + int(cc[1])) & 0xff
		a2 = (paethPred(a2, b2, c2) + int(cc[2])) & 0xff
		a3 = (paethPred(a3, b3, c3) + int(cc[3])) & 0xff
		cc[0], cc[1], cc[2], cc[3] = byte(a0), byte(a1), byte(a2), byte(a3)
		c0, c1, c2, c3 = b0, b1, b2, b3
	}
}

func unPaethN(c, p []byte, bpp int) {
	p = p[:len(c)]
	for i := 0; i < bpp && i < len(c); i++ {
		c[i] += p[i] // the predictor is b when a = c = 0
	}
	for i := bpp; i < len(c); i++ {
		c[i] += byte(paethPred(int(c[i-bpp]), int(p[i]), int(p[i-bpp])))
	}
}
