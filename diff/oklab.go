package diff

import "math"

// Colour metrics (Options.ColorMetric).
const (
	// MetricYIQ is pixelmatch's YIQ distance, the default.
	MetricYIQ = "yiq"
	// MetricOKLab is pixelmatch 8's metric: the HyAB distance in the OKLab
	// colour space (Björn Ottosson 2020; HyAB: Abasi et al. 2020),
	// |ΔLr| + √(Δa² + Δb²) with Ottosson's toe-corrected lightness Lr, which
	// tells apart hues of one brightness that YIQ scores as nearly equal.
	MetricOKLab = "oklab"
)

// maxOKLabDelta scales Options.Threshold for MetricOKLab as maxYIQDelta does
// for YIQ: a pixel differs when its HyAB distance exceeds
// maxOKLabDelta·threshold, so threshold 0.1 is a distance of 0.1 (black
// against white is 1, the lightness axis running 0–1).
const maxOKLabDelta = 1.0

// okLabDelta is the HyAB distance in OKLab between pixel k of a and pixel m
// of b (byte offsets), semi-transparent pixels blended with white first.
func okLabDelta(a, b []byte, k, m int) float64 {
	if a[k] == b[m] && a[k+1] == b[m+1] && a[k+2] == b[m+2] && a[k+3] == b[m+3] {
		return 0
	}
	l1, a1, b1 := okLab(blendRGB(a[k], a[k+1], a[k+2], a[k+3]))
	l2, a2, b2 := okLab(blendRGB(b[m], b[m+1], b[m+2], b[m+3]))
	da, db := a1-a2, b1-b2
	return math.Abs(l1-l2) + math.Sqrt(da*da+db*db)
}

// Toe constants of Ottosson's Lr (pixelmatch's TOE_K1..3).
const (
	toeK1 = 0.206
	toeK2 = 0.03
	toeK3 = (1 + toeK1) / (1 + toeK2)
)

// okLab converts sRGB channels (0–255, possibly fractional after blending)
// to OKLab, with the toe-corrected lightness Lr in place of L (black 0,
// white 1, as L).
func okLab(r, g, b float64) (Lr, A, B float64) {
	lr, lg, lb := linear(r), linear(g), linear(b)
	l := math.Cbrt(0.4122214708*lr + 0.5363325363*lg + 0.0514459929*lb)
	m := math.Cbrt(0.2119034982*lr + 0.6806995451*lg + 0.1073969566*lb)
	s := math.Cbrt(0.0883024619*lr + 0.2817188376*lg + 0.6299787005*lb)
	L := 0.2104542553*l + 0.7936177850*m - 0.0040720468*s
	x := toeK3*L - toeK1
	return 0.5 * (x + math.Sqrt(x*x+4*toeK2*toeK3*L)),
		1.9779984951*l - 2.4285922050*m + 0.4505937099*s,
		0.0259040371*l + 0.7827717662*m - 0.8086757660*s
}

// linear is the sRGB transfer function inverted, for a channel of 0–255.
func linear(c float64) float64 {
	if c == math.Trunc(c) && c >= 0 && c <= 255 {
		return linearTable[int(c)]
	}
	return linearOf(c)
}

func linearOf(c float64) float64 {
	c /= 255
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

var linearTable = func() (t [256]float64) {
	for i := range t {
		t[i] = linearOf(float64(i))
	}
	return t
}()
