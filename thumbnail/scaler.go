package thumbnail

import (
	"bytes"
	"fmt"
	"image"
)

// Geometry is the preview of a w×h image: tw×th pixels showing its first
// rows rows (all of them unless the image is cropped to MaxHeight).
func Geometry(w, h int) (tw, th, rows int) {
	tw = min(Width, w)
	th = max(1, h*tw/w)
	rows = h
	if th > MaxHeight {
		rows = min(h, MaxHeight*w/tw)
		th = MaxHeight
	}
	return tw, th, rows
}

// Scaler makes a preview from an image's rows as they stream past (a PNG
// cutter, a decoder), so a screenshot the capture already had in hand is not
// decoded again for its thumbnail. Each preview pixel is the mean of the
// source pixels that fall in it (a box filter), in premultiplied colour like
// Make's: transparent areas turn black in the JPEG.
type Scaler struct {
	w, tw, th, rows int
	xmap            []int    // source column -> preview column
	xn              []uint64 // source columns per preview column
	sum             []uint64 // r, g, b of the preview row being summed, ×255 (premultiplied)
	band, bandRows  int      // the preview row being summed, and its source rows so far
	seen            int      // source rows given
	out             *image.RGBA
}

// NewScaler returns a Scaler for a w×h image; nil when it has no pixels.
func NewScaler(w, h int) *Scaler {
	if w <= 0 || h <= 0 {
		return nil
	}
	tw, th, rows := Geometry(w, h)
	s := &Scaler{w: w, tw: tw, th: th, rows: rows, xmap: make([]int, w), xn: make([]uint64, tw),
		sum: make([]uint64, 3*tw), out: image.NewRGBA(image.Rect(0, 0, tw, th))}
	for x := range w {
		s.xmap[x] = x * tw / w
		s.xn[s.xmap[x]]++
	}
	return s
}

// Row adds source row y, which must be the next one (rows come in order from
// 0): bpp 3 is 8-bit RGB, 4 is 8-bit non-premultiplied RGBA (as PNG stores
// them). Rows past the preview's (a cropped tall image) are ignored.
func (s *Scaler) Row(y int, row []byte, bpp int) {
	if s == nil || y != s.seen || y >= s.rows || len(row) < s.w*bpp || (bpp != 3 && bpp != 4) {
		return
	}
	s.seen++
	if b := y * s.th / s.rows; b != s.band {
		s.flush()
		s.band = b
	}
	s.bandRows++
	if bpp == 3 {
		for x, tx := range s.xmap {
			p, q := row[3*x:3*x+3:3*x+3], s.sum[3*tx:3*tx+3:3*tx+3]
			q[0] += 255 * uint64(p[0])
			q[1] += 255 * uint64(p[1])
			q[2] += 255 * uint64(p[2])
		}
	} else {
		for x, tx := range s.xmap {
			p, q := row[4*x:4*x+4:4*x+4], s.sum[3*tx:3*tx+3:3*tx+3]
			a := uint64(p[3])
			q[0] += a * uint64(p[0])
			q[1] += a * uint64(p[1])
			q[2] += a * uint64(p[2])
		}
	}
	if s.seen == s.rows {
		s.flush()
	}
}

// flush writes the preview row being summed and starts the next one.
func (s *Scaler) flush() {
	if s.bandRows == 0 {
		return
	}
	dst := s.out.Pix[s.band*s.out.Stride:]
	for tx := range s.tw {
		n := 255 * s.xn[tx] * uint64(s.bandRows)
		for c := range 3 {
			dst[4*tx+c] = byte((s.sum[3*tx+c] + n/2) / n)
			s.sum[3*tx+c] = 0
		}
		dst[4*tx+3] = 255
	}
	s.bandRows = 0
}

// Image is the preview, or nil until every row it shows has been given.
func (s *Scaler) Image() *image.RGBA {
	if s == nil || s.seen < s.rows {
		return nil
	}
	return s.out
}

// FromImage encodes a preview a Scaler made (or any image already at a
// preview's size) as a thumbnail.
func FromImage(img *image.RGBA) (*Thumbnail, error) {
	b := img.Bounds()
	if b.Dx() == 0 || b.Dy() == 0 || b.Dx() > Width || b.Dy() > MaxHeight {
		return nil, fmt.Errorf("thumbnail: a %dx%d preview is not a thumbnail's size", b.Dx(), b.Dy())
	}
	var buf bytes.Buffer
	if err := Encode(&buf, img); err != nil {
		return nil, err
	}
	return &Thumbnail{Data: buf.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
}
