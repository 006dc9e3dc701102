package diff

import (
	"errors"
	"image"
	"image/color"
	"image/draw"
	"math"
	"testing"
)

var (
	white = color.NRGBA{255, 255, 255, 255}
	black = color.NRGBA{0, 0, 0, 255}
	gray  = color.NRGBA{128, 128, 128, 255}
)

// filled returns a w×h NRGBA image of one colour.
func filled(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Rect, image.NewUniform(c), image.Point{}, draw.Src)
	return img
}

// band draws a full-height black band from x0 to x1 (exclusive) on white,
// with a one-pixel gray anti-aliased edge on each side.
func band(w, h, x0, x1 int) *image.NRGBA {
	img := filled(w, h, white)
	for y := range h {
		img.SetNRGBA(x0-1, y, gray)
		for x := x0; x < x1; x++ {
			img.SetNRGBA(x, y, black)
		}
		img.SetNRGBA(x1, y, gray)
	}
	return img
}

// mustCompare runs Compare and fails the test on an error.
func mustCompare(t *testing.T, a, b image.Image, o Options) *Result {
	t.Helper()
	r, err := Compare(a, b, o)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return r
}

// pixel reads the diff image at (x, y).
func pixel(t *testing.T, r *Result, x, y int) color.NRGBA {
	t.Helper()
	if r.Diff == nil {
		t.Fatal("no diff image")
	}
	return r.Diff.NRGBAAt(x, y)
}

func TestIdentical(t *testing.T) {
	t.Parallel()
	a := band(40, 30, 10, 20)
	r := mustCompare(t, a, band(40, 30, 10, 20), DefaultOptions())
	if r.DiffPixels != 0 || r.AAPixels != 0 || r.Ratio != 0 || !r.Bounds.Empty() || r.SizeMismatch {
		t.Fatalf("identical images: got %+v", r)
	}
	if r.Width != 40 || r.Height != 30 || r.Diff.Rect != image.Rect(0, 0, 40, 30) {
		t.Fatalf("size: got %dx%d, diff image %v", r.Width, r.Height, r.Diff.Rect)
	}
	if !Passes(r, 0) {
		t.Fatal("identical images must pass a ratio of 0")
	}
}

func TestOnePixelChanged(t *testing.T) {
	t.Parallel()
	a := filled(50, 40, white)
	b := filled(50, 40, white)
	b.SetNRGBA(17, 23, black)
	r := mustCompare(t, a, b, DefaultOptions())
	if r.DiffPixels != 1 || r.AAPixels != 0 {
		t.Fatalf("diff %d aa %d, want 1 and 0", r.DiffPixels, r.AAPixels)
	}
	if want := image.Rect(17, 23, 18, 24); r.Bounds != want {
		t.Fatalf("bounds %v, want %v", r.Bounds, want)
	}
	if want := 1.0 / 2000; r.Ratio != want {
		t.Fatalf("ratio %v, want %v", r.Ratio, want)
	}
	if Passes(r, 0) || !Passes(r, 0.001) {
		t.Fatalf("gate: ratio %v must fail 0 and pass 0.001", r.Ratio)
	}
	// Diff image: red at the change, white faded to 255 elsewhere.
	if got := pixel(t, r, 17, 23); got != (color.NRGBA{255, 0, 0, 255}) {
		t.Fatalf("changed pixel drawn %v, want red", got)
	}
	if got := pixel(t, r, 0, 0); got != (color.NRGBA{255, 255, 255, 255}) {
		t.Fatalf("white pixel drawn %v, want white", got)
	}
}

func TestFullyDifferent(t *testing.T) {
	t.Parallel()
	// pixelmatch counts every pixel of white against black (delta 32857).
	r := mustCompare(t, filled(16, 9, white), filled(16, 9, black), Options{})
	if r.DiffPixels != 16*9 || r.Ratio != 1 || r.Bounds != image.Rect(0, 0, 16, 9) {
		t.Fatalf("got diff %d ratio %v bounds %v, want 144, 1, full", r.DiffPixels, r.Ratio, r.Bounds)
	}
	if r.Diff != nil {
		t.Fatal("diff image rendered although not asked for")
	}
	// Not at the largest threshold: 32857 is not above 35215·1².
	r = mustCompare(t, filled(16, 9, white), filled(16, 9, black), Options{Threshold: 1})
	if r.DiffPixels != 0 {
		t.Fatalf("threshold 1: diff %d, want 0", r.DiffPixels)
	}
}

func TestColorDelta(t *testing.T) {
	t.Parallel()
	p := []byte{255, 255, 255, 255, 0, 0, 0, 255, 255, 0, 0, 255, 0, 255, 255, 255}
	// White against black: 0.5053·255², negative as the first is brighter.
	if got := colorDelta(p, p, 0, 4); math.Abs(got+32857.133) > 0.01 {
		t.Fatalf("white vs black delta %v, want -32857.133", got)
	}
	// Red against cyan is the largest distance, pixelmatch's 35215.
	if got := colorDelta(p, p, 8, 12); math.Abs(got-35214.749) > 0.01 {
		t.Fatalf("red vs cyan delta %v, want 35214.749", got)
	}
}

func TestAntiAliasedEdgeShifted(t *testing.T) {
	t.Parallel()
	a := band(60, 20, 20, 30)
	b := band(60, 20, 21, 31) // the same band one pixel to the right
	r := mustCompare(t, a, b, DefaultOptions())
	// Columns 19, 20, 30 and 31 change, all explained by anti-aliasing.
	if r.DiffPixels != 0 || r.AAPixels != 4*20 {
		t.Fatalf("diff %d aa %d, want 0 and 80", r.DiffPixels, r.AAPixels)
	}
	if got := pixel(t, r, 19, 5); got != (color.NRGBA{255, 255, 0, 255}) {
		t.Fatalf("AA pixel drawn %v, want yellow", got)
	}
	o := DefaultOptions()
	o.IncludeAA = true
	r = mustCompare(t, a, b, o)
	if r.DiffPixels != 4*20 || r.AAPixels != 0 || r.Bounds != image.Rect(19, 0, 32, 20) {
		t.Fatalf("IncludeAA: diff %d aa %d bounds %v, want 80, 0, (19,0)-(32,20)", r.DiffPixels, r.AAPixels, r.Bounds)
	}
}

func TestRealChangeNotAA(t *testing.T) {
	t.Parallel()
	// A solid block appears: its pixels have many equal neighbours.
	a := filled(40, 40, white)
	b := filled(40, 40, white)
	draw.Draw(b, image.Rect(10, 10, 20, 15), image.NewUniform(black), image.Point{}, draw.Src)
	r := mustCompare(t, a, b, DefaultOptions())
	if r.DiffPixels != 50 || r.AAPixels != 0 || r.Bounds != image.Rect(10, 10, 20, 15) {
		t.Fatalf("diff %d aa %d bounds %v, want 50, 0, (10,10)-(20,15)", r.DiffPixels, r.AAPixels, r.Bounds)
	}
}

func TestDifferentSizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		a, b     image.Image
		w, h     int
		wantDiff int
	}{
		{"taller", filled(10, 10, white), filled(10, 15, white), 10, 15, 50},
		{"wider", filled(12, 10, white), filled(10, 10, white), 12, 10, 20},
		{"crossed", filled(10, 4, white), filled(4, 10, white), 10, 10, 100 - 16},
		{"empty", filled(0, 0, white), filled(3, 2, white), 3, 2, 6},
		{"both empty", filled(0, 5, white), filled(0, 0, white), 0, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := mustCompare(t, tc.a, tc.b, DefaultOptions())
			if !r.SizeMismatch || r.Width != tc.w || r.Height != tc.h || r.DiffPixels != tc.wantDiff {
				t.Fatalf("got mismatch %v %dx%d diff %d, want true %dx%d %d",
					r.SizeMismatch, r.Width, r.Height, r.DiffPixels, tc.w, tc.h, tc.wantDiff)
			}
			if Passes(r, 1) {
				t.Fatal("a size mismatch must never pass")
			}
			if r.Diff.Rect != image.Rect(0, 0, tc.w, tc.h) {
				t.Fatalf("diff image %v, want %dx%d", r.Diff.Rect, tc.w, tc.h)
			}
		})
	}
	// The taller image's extra rows are red in the diff image.
	r := mustCompare(t, filled(10, 10, white), filled(10, 15, white), DefaultOptions())
	if got := pixel(t, r, 3, 12); got != (color.NRGBA{255, 0, 0, 255}) {
		t.Fatalf("extra row drawn %v, want red", got)
	}
	if r.Bounds != image.Rect(0, 10, 10, 15) {
		t.Fatalf("bounds %v, want the extra rows", r.Bounds)
	}
}

func TestThreshold(t *testing.T) {
	t.Parallel()
	// A uniform gray change of d levels has delta ≈ 0.5053·d²; at the
	// default 0.1 the limit is 352.15, so d ≤ 26 passes and d ≥ 27 fails.
	base := color.NRGBA{100, 100, 100, 255}
	tests := []struct {
		name      string
		threshold float64
		d         uint8
		wantDiff  int
	}{
		{"default, small change passes", 0, 20, 0},
		{"default, at the limit passes", 0, 26, 0},
		{"default, over the limit fails", 0, 27, 64},
		{"explicit 0.1 as default", 0.1, 30, 64},
		{"exact, one level fails", ExactThreshold, 1, 64},
		{"loose 0.5 passes 100 levels", 0.5, 100, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := base
			c.R, c.G, c.B = base.R+tc.d, base.G+tc.d, base.B+tc.d
			r := mustCompare(t, filled(8, 8, base), filled(8, 8, c), Options{Threshold: tc.threshold})
			if r.DiffPixels != tc.wantDiff {
				t.Fatalf("diff %d, want %d", r.DiffPixels, tc.wantDiff)
			}
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, th := range []float64{1.5, math.NaN()} {
		if _, err := Compare(filled(2, 2, white), filled(2, 2, white), Options{Threshold: th}); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("threshold %v: err %v, want ErrInvalidOptions", th, err)
		}
	}
	if _, err := Compare(nil, filled(2, 2, white), Options{}); !errors.Is(err, ErrNilImage) {
		t.Fatalf("nil image: err %v, want ErrNilImage", err)
	}
	huge := image.NewAlpha(image.Rect(0, 0, 0, 0))
	huge.Rect = image.Rect(0, 0, 1<<15, 1<<14) // size only; never read
	if _, err := Compare(huge, filled(1, 1, white), Options{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge image: err %v, want ErrTooLarge", err)
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	a := filled(30, 30, white)
	b := filled(30, 30, white)
	draw.Draw(b, image.Rect(5, 5, 10, 10), image.NewUniform(black), image.Point{}, draw.Src)   // masked
	draw.Draw(b, image.Rect(20, 20, 22, 22), image.NewUniform(black), image.Point{}, draw.Src) // not
	o := DefaultOptions()
	o.Mask = []image.Rectangle{image.Rect(4, 4, 11, 11), image.Rect(25, 25, 40, 40)} // second clipped
	r := mustCompare(t, a, b, o)
	if r.DiffPixels != 4 || r.Bounds != image.Rect(20, 20, 22, 22) {
		t.Fatalf("diff %d bounds %v, want 4 at (20,20)-(22,22)", r.DiffPixels, r.Bounds)
	}
	if r.MaskedPixels != 49+25 {
		t.Fatalf("masked %d, want 74", r.MaskedPixels)
	}
	for _, p := range []image.Point{{7, 7}, {4, 4}} { // a changed row and an identical one
		if got := pixel(t, r, p.X, p.Y); got != (color.NRGBA{0, 96, 255, 255}) {
			t.Fatalf("masked pixel %v drawn %v, want the mask colour", p, got)
		}
	}
	// A mask over the extra rows of a taller image excuses them.
	o.Mask = []image.Rectangle{image.Rect(0, 10, 10, 15)}
	r = mustCompare(t, filled(10, 10, white), filled(10, 15, white), o)
	if r.DiffPixels != 0 || !r.SizeMismatch || Passes(r, 1) {
		t.Fatalf("masked extra rows: diff %d mismatch %v", r.DiffPixels, r.SizeMismatch)
	}
}

func TestFadedPixel(t *testing.T) {
	t.Parallel()
	// Black fades to 255 + (0-255)·0.1 = 229.5, truncated to 229.
	a := filled(4, 4, black)
	b := filled(4, 4, black)
	b.SetNRGBA(0, 0, white)
	r := mustCompare(t, a, b, DefaultOptions())
	if got := pixel(t, r, 3, 3); got != (color.NRGBA{229, 229, 229, 255}) {
		t.Fatalf("faded black %v, want 229 gray", got)
	}
	// Transparent pixels fade to white.
	r = mustCompare(t, filled(2, 2, color.NRGBA{}), filled(2, 2, color.NRGBA{}), DefaultOptions())
	if got := pixel(t, r, 1, 1); got != (color.NRGBA{255, 255, 255, 255}) {
		t.Fatalf("faded transparent %v, want white", got)
	}
}

func TestAlphaBlendedWithWhite(t *testing.T) {
	t.Parallel()
	// Fully transparent black equals white once blended: no difference.
	r := mustCompare(t, filled(3, 3, color.NRGBA{0, 0, 0, 0}), filled(3, 3, white), Options{Threshold: ExactThreshold})
	if r.DiffPixels != 0 {
		t.Fatalf("transparent vs white: diff %d, want 0", r.DiffPixels)
	}
}

func TestImageTypes(t *testing.T) {
	t.Parallel()
	want := filled(20, 10, white)
	want.SetNRGBA(3, 4, black)
	rgba := image.NewRGBA(want.Rect)
	draw.Draw(rgba, rgba.Rect, want, image.Point{}, draw.Src)
	pal := image.NewPaletted(want.Rect, color.Palette{white, black})
	draw.Draw(pal, pal.Rect, want, image.Point{}, draw.Src)
	grayImg := image.NewGray(want.Rect)
	draw.Draw(grayImg, grayImg.Rect, want, image.Point{}, draw.Src)
	// A sub-image with an offset origin and a wider stride.
	big := filled(40, 30, black)
	draw.Draw(big, image.Rect(10, 10, 30, 20), want, image.Point{}, draw.Src)
	sub := big.SubImage(image.Rect(10, 10, 30, 20))
	// A translucent RGBA (premultiplied) goes through conversion.
	half := image.NewRGBA(image.Rect(0, 0, 2, 1))
	half.SetRGBA(0, 0, color.RGBA{64, 64, 64, 128})
	for _, img := range []image.Image{want, rgba, pal, grayImg, sub} {
		r := mustCompare(t, filled(20, 10, white), img, DefaultOptions())
		if r.DiffPixels != 1 || r.Bounds != image.Rect(3, 4, 4, 5) || r.SizeMismatch {
			t.Fatalf("%T: diff %d bounds %v mismatch %v, want 1 at (3,4)", img, r.DiffPixels, r.Bounds, r.SizeMismatch)
		}
	}
	straight := image.NewNRGBA(half.Rect)
	straight.SetNRGBA(0, 0, color.NRGBA{127, 127, 127, 128})
	r := mustCompare(t, half, straight, Options{Threshold: ExactThreshold})
	if r.DiffPixels != 0 {
		t.Fatalf("translucent RGBA vs the same straight-alpha colour: diff %d", r.DiffPixels)
	}
	straight.SetNRGBA(0, 0, color.NRGBA{64, 64, 64, 128}) // the premultiplied bytes, read as straight
	if r = mustCompare(t, half, straight, Options{Threshold: ExactThreshold}); r.DiffPixels != 1 {
		t.Fatalf("premultiplied bytes must not be taken as straight alpha: diff %d", r.DiffPixels)
	}
}

func TestPNGRoundTrip(t *testing.T) {
	t.Parallel()
	a := filled(30, 20, white)
	b := filled(30, 20, white)
	b.SetNRGBA(1, 2, black)
	r := mustCompare(t, a, b, DefaultOptions())
	data, err := EncodePNG(r.Diff)
	if err != nil {
		t.Fatal(err)
	}
	img, err := DecodePNG(data)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != image.Rect(0, 0, 30, 20) {
		t.Fatalf("decoded %v", img.Bounds())
	}
	if r2 := mustCompare(t, r.Diff, img, Options{Threshold: ExactThreshold}); r2.DiffPixels != 0 {
		t.Fatalf("round trip changed %d pixels", r2.DiffPixels)
	}
	if _, err := DecodePNG([]byte("not a png")); err == nil {
		t.Fatal("decoding garbage must fail")
	}
}

func TestTallPage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("allocates ~300 MB")
	}
	const w, h = 1280, 20000
	a := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range a.Pix {
		a.Pix[i] = 255
	}
	b := image.NewRGBA(a.Rect)
	copy(b.Pix, a.Pix)
	draw.Draw(b, image.Rect(100, 15000, 200, 15010), image.NewUniform(black), image.Point{}, draw.Src)
	r := mustCompare(t, a, b, DefaultOptions())
	if r.DiffPixels != 1000 || r.Bounds != image.Rect(100, 15000, 200, 15010) {
		t.Fatalf("diff %d bounds %v, want 1000 at (100,15000)-(200,15010)", r.DiffPixels, r.Bounds)
	}
}
