package capture

import (
	"math"
	"reflect"
	"testing"
)

func TestPlanSegments(t *testing.T) {
	t.Parallel()
	const maxInt = int(^uint(0) >> 1)
	tests := []struct {
		name                string
		page, viewport, max int
		want                Plan
	}{
		{name: "zero height gives one viewport", page: 0, viewport: 720, max: 10,
			want: Plan{Total: 1, Captured: 1, Rects: []Rect{{0, 720}}}},
		{name: "shorter than viewport gives one viewport", page: 300, viewport: 720, max: 10,
			want: Plan{Total: 1, Captured: 1, Rects: []Rect{{0, 720}}}},
		{name: "exactly one viewport", page: 720, viewport: 720, max: 10,
			want: Plan{Total: 1, Captured: 1, Rects: []Rect{{0, 720}}}},
		{name: "one pixel over one viewport", page: 721, viewport: 720, max: 10,
			want: Plan{Total: 2, Captured: 2, Rects: []Rect{{0, 720}, {720, 1}}}},
		{name: "exactly three viewports", page: 2160, viewport: 720, max: 10,
			want: Plan{Total: 3, Captured: 3, Rects: []Rect{{0, 720}, {720, 720}, {1440, 720}}}},
		{name: "three viewports and one pixel", page: 2161, viewport: 720, max: 10,
			want: Plan{Total: 4, Captured: 4, Rects: []Rect{{0, 720}, {720, 720}, {1440, 720}, {2160, 1}}}},
		{name: "remainder", page: 2000, viewport: 720, max: 10,
			want: Plan{Total: 3, Captured: 3, Rects: []Rect{{0, 720}, {720, 720}, {1440, 560}}}},
		{name: "truncated", page: 40000, viewport: 720, max: 2,
			want: Plan{Total: 56, Captured: 2, Truncated: true, Rects: []Rect{{0, 720}, {720, 720}}}},
		{name: "max equal to total is not truncated", page: 2000, viewport: 720, max: 3,
			want: Plan{Total: 3, Captured: 3, Rects: []Rect{{0, 720}, {720, 720}, {1440, 560}}}},
		{name: "zero max uses default", page: 100000, viewport: 1000, max: 0,
			want: Plan{Total: 100, Captured: DefaultMaxSegments, Truncated: true, Rects: rects(1000, DefaultMaxSegments)}},
		{name: "negative max uses default", page: 100000, viewport: 1000, max: -3,
			want: Plan{Total: 100, Captured: DefaultMaxSegments, Truncated: true, Rects: rects(1000, DefaultMaxSegments)}},
		{name: "max capped at 50", page: 100000, viewport: 1000, max: 1000,
			want: Plan{Total: 100, Captured: HardMaxSegments, Truncated: true, Rects: rects(1000, HardMaxSegments)}},
		{name: "huge page does not overflow", page: maxInt, viewport: 1, max: 1,
			want: Plan{Total: maxInt, Captured: 1, Truncated: true, Rects: []Rect{{0, 1}}}},
		{name: "huge page with big viewport", page: maxInt, viewport: 720, max: 1,
			want: Plan{Total: maxInt/720 + 1, Captured: 1, Truncated: true, Rects: []Rect{{0, 720}}}},
		{name: "zero viewport treated as 1", page: 3, viewport: 0, max: 10,
			want: Plan{Total: 3, Captured: 3, Rects: []Rect{{0, 1}, {1, 1}, {2, 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := PlanSegments(tt.page, tt.viewport, tt.max)
			if !reflect.DeepEqual(tt.want, got) {
				t.Errorf("PlanSegments(%d, %d, %d) mismatch (-want +got):\n-%+v\n+%+v", tt.page, tt.viewport, tt.max, tt.want, got)
			}
		})
	}
}

func rects(h, n int) []Rect {
	r := make([]Rect, n)
	for i := range r {
		r[i] = Rect{Y: i * h, Height: h}
	}
	return r
}

func TestNormalizeMaxSegments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   float64
		want int
	}{
		{name: "NaN", in: math.NaN(), want: DefaultMaxSegments},
		{name: "+Inf", in: math.Inf(1), want: DefaultMaxSegments},
		{name: "-Inf", in: math.Inf(-1), want: DefaultMaxSegments},
		{name: "zero", in: 0, want: DefaultMaxSegments},
		{name: "negative", in: -5, want: DefaultMaxSegments},
		{name: "fraction below one", in: 0.9, want: DefaultMaxSegments},
		{name: "one", in: 1, want: 1},
		{name: "fraction floored", in: 7.9, want: 7},
		{name: "hard max", in: 50, want: HardMaxSegments},
		{name: "just over hard max", in: 50.5, want: HardMaxSegments},
		{name: "over hard max", in: 51, want: HardMaxSegments},
		{name: "huge", in: 1e300, want: HardMaxSegments},
		{name: "max float", in: math.MaxFloat64, want: HardMaxSegments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := NormalizeMaxSegments(tt.in); got != tt.want {
				t.Errorf("NormalizeMaxSegments(%v) mismatch (-want +got):\n-%d\n+%d", tt.in, tt.want, got)
			}
		})
	}
}
