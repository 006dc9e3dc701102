package pngcut

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"testing"
)

// --- sources ---------------------------------------------------------------------------------

// webLike draws something like a rendered web page: flat backgrounds, a header bar, lines of
// text-like glyph noise, photo-like noise and gradient blocks, and hard box edges.
func webLike(w, h int, seed uint64) *image.NRGBA {
	r := rand.New(rand.NewPCG(seed, 1))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	fill := func(x0, y0, x1, y1 int, c color.NRGBA) {
		for y := max(y0, 0); y < min(y1, h); y++ {
			for x := max(x0, 0); x < min(x1, w); x++ {
				m.SetNRGBA(x, y, c)
			}
		}
	}
	font := make([][]byte, 70) // 7x12 glyphs, 255 = background
	for i := range font {
		font[i] = make([]byte, 7*12)
		for j := range font[i] {
			switch r.IntN(6) {
			case 0, 1:
				font[i][j] = uint8(r.IntN(60))
			case 2:
				font[i][j] = uint8(60 + r.IntN(195))
			default:
				font[i][j] = 255
			}
		}
	}
	fill(0, 0, w, h, color.NRGBA{255, 255, 255, 255})
	fill(0, 0, w, 64, color.NRGBA{0x20, 0x40, 0x80, 255})
	for y := 80; y < h; {
		switch r.IntN(25) {
		case 0: // photo: mild noise over a gradient
			bh := 100 + r.IntN(200)
			x0, x1 := w/10, w-w/10
			for yy := y; yy < min(y+bh, h); yy++ {
				for x := x0; x < x1; x++ {
					n := uint8(r.IntN(10))
					m.SetNRGBA(x, yy, color.NRGBA{uint8(x*255/max(w, 1)) + n, uint8((yy-y)*2) + n, 0x80 + n, 255})
				}
			}
			y += bh + 20
		case 1, 2, 3: // a box with a border and a flat background
			bh := 40 + r.IntN(120)
			fill(w/20, y, w-w/20, y+bh, color.NRGBA{0xcc, 0xcc, 0xcc, 255})
			fill(w/20+1, y+1, w-w/20-1, y+bh-1, color.NRGBA{0xf4, 0xf6, 0xf8, 255})
			y += bh + 10
		default: // a line of text from a small "font" of anti-aliased glyphs
			for x := w / 20; x < w-w/20; {
				for range 2 + r.IntN(9) { // a word
					g := font[r.IntN(len(font))]
					for gy := range 12 {
						for gx := range 7 {
							if v := g[gy*7+gx]; v != 255 && x+gx < w && y+2+gy < h {
								m.SetNRGBA(x+gx, y+2+gy, color.NRGBA{v, v, v + (255-v)/8, 255})
							}
						}
					}
					x += 8
				}
				x += 6
			}
			y += 18
		}
	}
	return m
}

// mixed has noise, gradients, flat areas and sharp edges; alpha varies when translucent.
func mixed(w, h int, seed uint64, translucent bool) *image.NRGBA {
	r := rand.New(rand.NewPCG(seed, 2))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var c color.NRGBA
			switch (y / 5) % 4 {
			case 0:
				c = color.NRGBA{uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), 255}
			case 1:
				c = color.NRGBA{uint8(x), uint8(y), uint8(x + y), 255}
			case 2:
				c = color.NRGBA{10, 200, 30, 255}
			default:
				if (x/3+y)%2 == 0 {
					c = color.NRGBA{255, 255, 255, 255}
				} else {
					c = color.NRGBA{0, 0, 0, 255}
				}
			}
			if translucent {
				c.A = uint8(x*7 + y*13 + r.IntN(4))
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

// encodeWithFilters encodes m as an 8-bit RGB (rgb) or RGBA PNG whose row y uses filter
// filter(y), deflated at level and split into IDAT chunks of idatSize bytes. It is an
// independent, straight-from-the-spec encoder, so sources can use every filter deliberately;
// Chromium's fast path writes RGB with every row filtered Up, zlib level 1, 4 KiB IDATs.
func encodeWithFilters(t testing.TB, m *image.NRGBA, rgb bool, filter func(y int) byte, level, idatSize int) []byte {
	t.Helper()
	w, h := m.Bounds().Dx(), m.Bounds().Dy()
	bpp, ct := 4, byte(6)
	if rgb {
		bpp, ct = 3, 2
	}
	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, level)
	if err != nil {
		t.Fatal(err)
	}
	prev, raw := make([]byte, w*bpp), make([]byte, w*bpp)
	row := make([]byte, 1+w*bpp)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := m.NRGBAAt(x, y)
			copy(raw[x*bpp:], []byte{c.R, c.G, c.B, c.A}[:bpp])
		}
		ft := filter(y)
		row[0] = ft
		for i := range raw {
			var a, b, c int
			if i >= bpp {
				a, c = int(raw[i-bpp]), int(prev[i-bpp])
			}
			b = int(prev[i])
			var pred int
			switch ft {
			case 1:
				pred = a
			case 2:
				pred = b
			case 3:
				pred = (a + b) / 2
			case 4:
				pred = specPaeth(a, b, c)
			}
			row[1+i] = raw[i] - byte(pred)
		}
		if _, err := zw.Write(row); err != nil {
			t.Fatal(err)
		}
		prev, raw = raw, prev
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, ct
	out := []byte(pngSignature)
	out = appendTestChunk(out, "IHDR", ihdr[:])
	for d := z.Bytes(); len(d) > 0; {
		n := min(len(d), idatSize)
		out = appendTestChunk(out, "IDAT", d[:n])
		d = d[n:]
	}
	return appendTestChunk(out, "IEND", nil)
}

// specPaeth is the PNG specification's sample code, on purpose not the optimised one.
func specPaeth(a, b, c int) int {
	p := a + b - c
	pa, pb, pc := p-a, p-b, p-c
	if pa < 0 {
		pa = -pa
	}
	if pb < 0 {
		pb = -pb
	}
	if pc < 0 {
		pc = -pc
	}
	if pa <= pb && pa <= pc {
		return a
	}
	if pb <= pc {
		return b
	}
	return c
}

func appendTestChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[len(b)-len(data)-4:]))
}

func goEncode(t testing.TB, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// --- checks ----------------------------------------------------------------------------------

// layouts returns the cut layouts tried on an image of h rows.
func layouts(h int) map[string][]Range {
	l := map[string][]Range{
		"whole":     {{0, h}},
		"first row": {{0, 1}},
		"last row":  {{h - 1, h}},
	}
	var seg []Range
	for y := 0; y < h; y += 720 {
		seg = append(seg, Range{y, min(y+720, h)})
	}
	l["720 rows"] = seg
	if h <= 64 {
		var rows []Range
		for y := 0; y < h; y++ {
			rows = append(rows, Range{y, y + 1})
		}
		l["single rows"] = rows
	}
	if h >= 4 {
		l["gaps"] = []Range{{1, 2}, {2, h / 2}, {h/2 + 1, h - 1}}
		l["edges"] = []Range{{0, 2}, {h - 2, h}}
	}
	return l
}

// checkPieces decodes every piece and compares it with rows of want (the decoded source).
func checkPieces(t *testing.T, want image.Image, cuts []Range, pieces [][]byte) {
	t.Helper()
	if len(pieces) != len(cuts) {
		t.Fatalf("%d pieces, want %d", len(pieces), len(cuts))
	}
	wb := want.Bounds()
	for i, c := range cuts {
		got, err := png.Decode(bytes.NewReader(pieces[i]))
		if err != nil {
			t.Fatalf("piece %d %v: %v", i, c, err)
		}
		if b := got.Bounds(); b != image.Rect(0, 0, wb.Dx(), c.Y1-c.Y0) {
			t.Fatalf("piece %d %v: bounds %v, want %dx%d", i, c, b, wb.Dx(), c.Y1-c.Y0)
		}
		if fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) {
			t.Fatalf("piece %d decodes as %T, source as %T", i, got, want)
		}
		for y := c.Y0; y < c.Y1; y++ {
			if x, ok := sameRow(want, got, y, y-c.Y0); !ok {
				t.Fatalf("piece %d %v: row %d differs at x=%d: got %v want %v", i, c, y, x,
					got.At(x, y-c.Y0), want.At(x, y))
			}
		}
	}
}

// sameRow compares row ya of a with row yb of b; it returns the first differing x.
func sameRow(a, b image.Image, ya, yb int) (int, bool) {
	var pa, pb []byte
	switch a := a.(type) {
	case *image.NRGBA:
		pa, pb = a.Pix[ya*a.Stride:][:a.Rect.Dx()*4], b.(*image.NRGBA).Pix[yb*b.(*image.NRGBA).Stride:][:a.Rect.Dx()*4]
	case *image.RGBA:
		pa, pb = a.Pix[ya*a.Stride:][:a.Rect.Dx()*4], b.(*image.RGBA).Pix[yb*b.(*image.RGBA).Stride:][:a.Rect.Dx()*4]
	default:
		for x := 0; x < a.Bounds().Dx(); x++ {
			if a.At(x, ya) != b.At(x, yb) {
				return x, false
			}
		}
		return 0, true
	}
	if bytes.Equal(pa, pb) {
		return 0, true
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return i / 4, false
		}
	}
	return 0, false
}

// rowFilters inflates the IDAT stream of a PNG written by Cut and returns each row's filter.
func rowFilters(t *testing.T, p []byte) []byte {
	t.Helper()
	s, err := parse(p)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(s.idatReader())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr) // also checks the adler32 we wrote
	if err != nil {
		t.Fatal(err)
	}
	stride := 1 + s.width*s.bpp
	if len(raw) != stride*s.height {
		t.Fatalf("IDAT holds %d bytes, want %d", len(raw), stride*s.height)
	}
	f := make([]byte, s.height)
	for y := range f {
		f[y] = raw[y*stride]
	}
	return f
}

// --- tests -----------------------------------------------------------------------------------

func TestCutPNGMatchesSource(t *testing.T) {
	t.Parallel()
	type source struct {
		name string
		data []byte
	}
	cycle := func(y int) byte { return byte(y % 5) }
	var sources []source
	for _, w := range []int{1, 3, 1280, 1281} {
		for _, h := range []int{1, 2, 7, 50, 730} {
			if w <= 3 && h == 730 || w >= 1280 && (h == 7 || h == 50) {
				continue // keep the run short: wide images tall, narrow ones short
			}
			name := fmt.Sprintf("%dx%d", w, h)
			web := webLike(w, h, uint64(w*h))
			sources = append(sources,
				source{name + " go opaque (RGB)", goEncode(t, web)},
				source{name + " go translucent (RGBA)", goEncode(t, mixed(w, h, 1, true))},
				source{name + " chromium-like", encodeWithFilters(t, web, true, func(int) byte { return 2 }, zlib.BestSpeed, 4096)},
				source{name + " RGB cycling filters", encodeWithFilters(t, mixed(w, h, 2, false), true, cycle, zlib.DefaultCompression, 1000)},
				source{name + " RGBA cycling filters", encodeWithFilters(t, mixed(w, h, 3, true), false, cycle, zlib.DefaultCompression, 1<<20)},
			)
			// RGBA with varying premultiplied content, encoded by Go as RGBA.
			rgba := image.NewRGBA(image.Rect(0, 0, w, h))
			for i := range rgba.Pix {
				rgba.Pix[i] = uint8(i * 7 / 3)
			}
			for i := 3; i < len(rgba.Pix); i += 4 {
				rgba.Pix[i] = 255 - uint8(i%200)
				rgba.Pix[i-1], rgba.Pix[i-2], rgba.Pix[i-3] = min(rgba.Pix[i-1], rgba.Pix[i]), min(rgba.Pix[i-2], rgba.Pix[i]), min(rgba.Pix[i-3], rgba.Pix[i])
			}
			sources = append(sources, source{name + " go image.RGBA", goEncode(t, rgba)})
			if w == 3 && h == 50 {
				for f := byte(0); f <= 4; f++ {
					for _, rgb := range []bool{true, false} {
						sources = append(sources, source{fmt.Sprintf("%s filter %d rgb=%v", name, f, rgb),
							encodeWithFilters(t, mixed(w, h, uint64(f), !rgb), rgb, func(int) byte { return f }, zlib.BestSpeed, 7)})
					}
				}
			}
		}
	}
	for _, src := range sources {
		want, err := png.Decode(bytes.NewReader(src.data))
		if err != nil {
			t.Fatalf("%s: %v", src.name, err)
		}
		s, err := parse(src.data)
		if err != nil {
			t.Fatalf("%s: %v", src.name, err)
		}
		wantFilters := rowFilters(t, src.data)
		for lname, cuts := range layouts(want.Bounds().Dy()) {
			t.Run(src.name+"/"+lname, func(t *testing.T) {
				pieces, err := Cut(src.data, cuts)
				if err != nil {
					t.Fatalf("Cut: %v", err)
				}
				checkPieces(t, want, cuts, pieces)
				for i, c := range cuts {
					if got, _ := parse(pieces[i]); got.bpp != s.bpp {
						t.Fatalf("piece %d has %d bytes per pixel, source %d", i, got.bpp, s.bpp)
					}
					f := rowFilters(t, pieces[i])
					if f[0] != 0 {
						t.Errorf("piece %d: first row filter %d, want 0", i, f[0])
					}
					if !bytes.Equal(f[1:], wantFilters[c.Y0+1:c.Y1]) {
						t.Errorf("piece %d: rows after the first were re-filtered", i)
					}
				}
			})
		}
	}
}

func TestCutPNGKeepsColorSpaceChunks(t *testing.T) {
	t.Parallel()
	src := encodeWithFilters(t, webLike(16, 10, 1), true, func(int) byte { return 2 }, 1, 4096)
	ihdrEnd := len(pngSignature) + 12 + 13
	var with []byte
	with = append(with, src[:ihdrEnd]...)
	with = appendTestChunk(with, "sRGB", []byte{0})
	with = appendTestChunk(with, "tEXt", []byte("Software\x00test"))
	with = appendTestChunk(with, "gAMA", []byte{0, 0, 0xb1, 0x8f})
	with = append(with, src[ihdrEnd:]...)
	pieces, err := Cut(with, []Range{{0, 4}, {4, 10}})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pieces {
		if !bytes.Contains(p, []byte("sRGB")) || !bytes.Contains(p, []byte("gAMA")) || bytes.Contains(p, []byte("tEXt")) {
			t.Errorf("piece %d: want sRGB and gAMA kept, tEXt dropped", i)
		}
	}
	want, _ := png.Decode(bytes.NewReader(src))
	checkPieces(t, want, []Range{{0, 4}, {4, 10}}, pieces)
}

func TestCutPNGUnsupported(t *testing.T) {
	t.Parallel()
	m := webLike(8, 6, 1)
	gray := image.NewGray(m.Rect)
	pal := image.NewPaletted(m.Rect, color.Palette{color.Black, color.White})
	deep := image.NewNRGBA64(m.Rect)
	for i := range deep.Pix {
		deep.Pix[i] = uint8(i)
	}
	rgb := encodeWithFilters(t, m, true, func(int) byte { return 0 }, 1, 4096)
	interlaced := bytes.Clone(rgb)
	ihdr := interlaced[len(pngSignature):]
	ihdr[8+12] = 1
	binary.BigEndian.PutUint32(ihdr[8+13:], crc32.ChecksumIEEE(ihdr[4:8+13]))

	for name, data := range map[string][]byte{
		"grey":       goEncode(t, gray),
		"palette":    goEncode(t, pal),
		"16-bit":     goEncode(t, deep),
		"interlaced": interlaced,
	} {
		if _, err := Cut(data, []Range{{0, 6}}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrUnsupported", name, err)
		}
	}
}

func TestCutPNGRejectsBadInput(t *testing.T) {
	t.Parallel()
	m := mixed(20, 12, 4, false)
	src := encodeWithFilters(t, m, true, func(y int) byte { return byte(y % 5) }, 1, 64)
	whole := []Range{{0, 12}}
	bad := func(name string, data []byte, cuts []Range) {
		t.Helper()
		p, err := Cut(data, cuts)
		if err == nil {
			t.Errorf("%s: no error (%d pieces)", name, len(p))
		} else if errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: err = %v, want a plain error, not a fallback", name, err)
		}
	}
	for n := 0; n < len(src); n += 7 {
		bad(fmt.Sprintf("truncated at %d", n), src[:n], whole)
	}
	for _, off := range []int{len(pngSignature) + 9, len(src) / 2, len(src) - 14} {
		flipped := bytes.Clone(src)
		flipped[off] ^= 0x10
		bad(fmt.Sprintf("bad CRC at %d", off), flipped, whole)
	}
	bad("not a PNG", []byte("GIF89a..."), whole)

	// Valid chunks, damaged content.
	filt := encodeWithFilters(t, m, true, func(y int) byte { return map[bool]byte{true: 5}[y == 3] }, 1, 4096)
	bad("filter type 5", filt, whole)
	s, _ := parse(src)
	var z []byte
	for _, d := range s.idat {
		z = append(z, d...)
	}
	rebuild := func(z []byte) []byte {
		out := append([]byte(pngSignature), src[8:8+25]...)
		return appendTestChunk(appendTestChunk(out, "IDAT", z), "IEND", nil)
	}
	bad("short deflate stream", rebuild(z[:len(z)/2]), whole)
	bad("bad zlib header", rebuild(append([]byte{0x78, 0x02}, z[2:]...)), whole)
	bad("IDAT chunks not consecutive", rebuildSplit(src, z), whole)
	bad("no IDAT", appendTestChunk(append([]byte(pngSignature), src[8:8+25]...), "IEND", nil), whole)

	// Ranges.
	for name, cuts := range map[string][]Range{
		"past the end":  {{0, 13}},
		"negative":      {{-1, 3}},
		"empty":         {{2, 2}},
		"overlapping":   {{0, 5}, {4, 8}},
		"not ascending": {{6, 8}, {0, 2}},
	} {
		bad(name, src, cuts)
	}
	if p, err := Cut(src, nil); err != nil || len(p) != 0 {
		t.Errorf("no ranges: %d pieces, %v", len(p), err)
	}
}

// rebuildSplit rewrites src with its deflate data z split into two IDATs around a tEXt chunk.
func rebuildSplit(src, z []byte) []byte {
	out := append([]byte(pngSignature), src[8:8+25]...)
	out = appendTestChunk(out, "IDAT", z[:len(z)/2])
	out = appendTestChunk(out, "tEXt", []byte("a\x00b"))
	out = appendTestChunk(out, "IDAT", z[len(z)/2:])
	return appendTestChunk(out, "IEND", nil)
}

// TestCutPNGDamagedNoPanic flips bytes of the deflate data (fixing the CRCs) and requires an
// error or pieces that decode, never a panic.
func TestCutPNGDamagedNoPanic(t *testing.T) {
	t.Parallel()
	src := encodeWithFilters(t, mixed(9, 30, 5, true), false, func(y int) byte { return byte(y % 5) }, 1, 1<<20)
	s, _ := parse(src)
	z := s.idat[0]
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 2000; i++ {
		d := bytes.Clone(z)
		for j := 0; j <= r.IntN(3); j++ {
			d[r.IntN(len(d))] ^= byte(1 + r.IntN(255))
		}
		data := append([]byte(pngSignature), src[8:8+25]...)
		data = appendTestChunk(appendTestChunk(data, "IDAT", d), "IEND", nil)
		pieces, err := Cut(data, []Range{{0, 1}, {3, 17}, {17, 30}})
		if err != nil {
			continue
		}
		for _, p := range pieces {
			if _, err := png.Decode(bytes.NewReader(p)); err != nil {
				t.Fatalf("damaged input %d gave a piece that does not decode: %v", i, err)
			}
		}
	}
}

// --- benchmark -------------------------------------------------------------------------------

// fallbackEncoder is how capture encodes a PNG piece when it decodes instead of cutting
// (capture's pngEncoder, screenshot.go).
var fallbackEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

// BenchmarkCut compares the decode + encode path with Cut on a 1280x7200 web-like band cut
// into 720-row pieces. The "chromium" source is encoded like Chromium's fast path (RGB, every
// row filtered Up, zlib level 1); the "go" source by image/png (mixed filters).
func BenchmarkCut(b *testing.B) {
	const w, h = 1280, 7200
	m := webLike(w, h, 42)
	var cuts []Range
	for y := 0; y < h; y += 720 {
		cuts = append(cuts, Range{y, y + 720})
	}
	for _, src := range []struct {
		name string
		data []byte
	}{
		{"chromium", encodeWithFilters(b, m, true, func(int) byte { return 2 }, 1, 4096)},
		{"go", goEncode(b, m)},
	} {
		b.Run(src.name+"/decode+encode", func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = 0
				img, err := png.Decode(bytes.NewReader(src.data))
				if err != nil {
					b.Fatal(err)
				}
				sub := img.(interface {
					SubImage(image.Rectangle) image.Image
				})
				for _, c := range cuts {
					var p bytes.Buffer
					if err := fallbackEncoder.Encode(&p, sub.SubImage(image.Rect(0, c.Y0, w, c.Y1))); err != nil {
						b.Fatal(err)
					}
					n += p.Len()
				}
			}
			b.ReportMetric(float64(len(src.data)), "src-bytes")
			b.ReportMetric(float64(n), "out-bytes")
		})
		for _, lv := range []struct {
			name  string
			level int
		}{{"Cut", zlib.BestSpeed}, {"Cut-default", zlib.DefaultCompression}} {
			b.Run(src.name+"/"+lv.name, func(b *testing.B) {
				b.ReportAllocs()
				var n int
				for b.Loop() {
					n = 0
					pieces, err := cutLevel(src.data, cuts, lv.level, nil)
					if err != nil {
						b.Fatal(err)
					}
					for _, p := range pieces {
						n += len(p)
					}
				}
				b.ReportMetric(float64(len(src.data)), "src-bytes")
				b.ReportMetric(float64(n), "out-bytes")
			})
		}
	}
}
