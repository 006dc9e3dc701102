package diff

import (
	"image/color"
	"testing"
)

// Pairs of colours YIQ scores within the default threshold (the same colour
// for pixelmatch) that OKLab's HyAB distance tells apart: saturated blues
// and greens whose brightness barely differs.
func TestOKLabTellsApartWhatYIQCannot(t *testing.T) {
	t.Parallel()
	pairs := [][2]color.NRGBA{
		{{0, 17, 102, 255}, {0, 2, 162, 255}},
		{{0, 34, 0, 255}, {0, 19, 60, 255}},
		{{0, 17, 170, 255}, {0, 2, 230, 255}},
	}
	for _, p := range pairs {
		a, b := filled(8, 8, p[0]), filled(8, 8, p[1])
		yiq := mustCompare(t, a, b, Options{})
		ok := mustCompare(t, a, b, Options{ColorMetric: MetricOKLab})
		if yiq.DiffPixels != 0 {
			t.Errorf("%v vs %v: YIQ counts %d px; the pair is meant to look equal to it", p[0], p[1], yiq.DiffPixels)
		}
		if ok.DiffPixels != 64 {
			t.Errorf("%v vs %v: OKLab counts %d px, want all 64", p[0], p[1], ok.DiffPixels)
		}
	}
	// Both agree on what is really the same or really different.
	for _, p := range [][2]color.NRGBA{{{120, 120, 120, 255}, {121, 120, 120, 255}}, {{255, 255, 255, 255}, {0, 0, 0, 255}}} {
		a, b := filled(4, 4, p[0]), filled(4, 4, p[1])
		if y, o := mustCompare(t, a, b, Options{}).DiffPixels, mustCompare(t, a, b, Options{ColorMetric: MetricOKLab}).DiffPixels; y != o {
			t.Errorf("%v vs %v: YIQ %d px, OKLab %d px", p[0], p[1], y, o)
		}
	}
	if _, err := Compare(filled(1, 1, white), filled(1, 1, white), Options{ColorMetric: "lab"}); err == nil {
		t.Error("an unknown colour metric must be refused")
	}
}
