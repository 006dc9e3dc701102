package jobs

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCaptureBudgetValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []FieldError // nil: accepted
	}{
		{
			name: "one viewport image over 64 MP",
			body: `{"options": {"viewport": {"width": 4096, "height": 4096, "device_scale_factor": 4}}, "urls": ["https://a.example/"]}`,
			want: []FieldError{{Code: "invalid_option", Field: "options.viewport.device_scale_factor",
				Message: "a 4096×4096 viewport at device_scale_factor 4 is 268435456 device px per image, over the limit of 64000000 (64 MP); at this size device_scale_factor may be at most 1.95"}},
		},
		{
			name: "the target's scale over the batch's viewport",
			body: `{"options": {"viewport": {"width": 4096, "height": 4096}}, "targets": [{"url": "https://a.example/", "options": {"viewport": {"device_scale_factor": 2}}}]}`,
			want: []FieldError{{Code: "invalid_option", Field: "targets[0].options.viewport.device_scale_factor",
				Message: "a 4096×4096 viewport at device_scale_factor 2 is 67108864 device px per image, over the limit of 64000000 (64 MP); at this size device_scale_factor may be at most 1.95"}},
		},
		{
			name: "segments over the job's 200 MP",
			body: `{"options": {"viewport": {"width": 1920, "height": 1080, "device_scale_factor": 2}, "screenshot": {"max_segments": 50}}, "urls": ["https://a.example/"]}`,
			want: []FieldError{{Code: "invalid_option", Field: "options.screenshot.max_segments",
				Message: "screenshot.max_segments 50 brings the job's screenshots to 50 images of 8294400 device px (1920×1080 at device_scale_factor 2), 414720000 px in the worst case, over the job's budget of 200000000 (200 MP); at this viewport a job may hold at most 24 such images"}},
		},
		{
			name: "a screenshot action passes the job's budget",
			body: `{"options": {"viewport": {"width": 1920, "height": 1080, "device_scale_factor": 2}, "screenshot": {"max_segments": 20},
			  "actions": [{"type": "screenshot", "name": "a"}, {"type": "screenshot", "name": "b", "mode": "segments", "max_segments": 5}]},
			  "urls": ["https://a.example/"]}`,
			want: []FieldError{{Code: "invalid_option", Field: "options.actions[1].max_segments",
				Message: `the screenshot action "b" brings the job's screenshots to 26 images of 8294400 device px (1920×1080 at device_scale_factor 2), 215654400 px in the worst case, over the job's budget of 200000000 (200 MP); at this viewport a job may hold at most 24 such images`}},
		},
		{
			name: "exactly at the job's budget",
			body: `{"options": {"viewport": {"width": 1920, "height": 1080, "device_scale_factor": 2}, "screenshot": {"max_segments": 24}}, "urls": ["https://a.example/"]}`,
		},
		{
			name: "the largest scale of the largest viewport, one image",
			body: `{"options": {"viewport": {"width": 4096, "height": 4096, "device_scale_factor": 1.95}, "screenshot": {"mode": "full"}}, "urls": ["https://a.example/"]}`,
		},
		{
			name: "no screenshot taken: the scale costs nothing",
			body: `{"options": {"viewport": {"width": 4096, "height": 4096, "device_scale_factor": 4}, "outputs": ["html"]}, "urls": ["https://a.example/"]}`,
		},
		{
			name: "the defaults",
			body: `{"urls": ["https://a.example/"]}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ParseBatchRequest([]byte(tc.body), 0)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error = %v, want *ValidationError", err)
			}
			if diff := cmp.Diff(tc.want, ve.Fields); diff != "" {
				t.Errorf("field errors (-want +got):\n%s", diff)
			}
		})
	}
}
