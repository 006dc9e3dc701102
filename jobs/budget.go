package jobs

import (
	"fmt"
	"math"
	"slices"

	"github.com/snapq/snapq/capture"
)

// The capture budget at validation: what the options alone make certain is refused before
// the job is queued (400). One viewport image over capture.MaxImagePixels (4096×4096 at
// scale 4 is 268 MP, over 1 GiB raw) is refused, not clamped: a silently smaller scale
// would not be the image asked for. The worst case of a job's screenshots, every image one
// full viewport (max_segments of them in segments mode, one otherwise, for the screenshot
// output and each screenshot action), over capture.MaxJobPixels is refused too. What only the
// page decides (its height in full mode, an element's size, encoded bytes) is checked at
// capture time with capture.CodeTooLargeCapture (capture/budget.go).

// checkBudget records in errs the field error of resolved options over the capture budget. It
// names the field to change: device_scale_factor for one image (without it no viewport
// reaches the limit), else the max_segments, or the action, whose images pass the job's.
func (o Options) checkBudget(batch *OptionsInput, batchPrefix string, target *OptionsInput, targetPrefix string, errs *FieldErrors) {
	if !o.wantsScreenshot() && !slices.ContainsFunc(o.Actions, func(a Action) bool { return a.Type == capture.ActionScreenshot }) {
		return // no image is taken: the viewport's scale costs nothing
	}
	vp := o.Viewport
	img := imagePixels(vp)
	if img > capture.MaxImagePixels {
		field := blame(batch, batchPrefix, target, targetPrefix, func(in *OptionsInput) bool {
			return in.Viewport != nil && in.Viewport.DeviceScaleFactor != nil
		}) + ".viewport.device_scale_factor"
		maxDSF := math.Floor(math.Sqrt(float64(capture.MaxImagePixels)/float64(vp.Width*vp.Height))*100) / 100
		errs.Add("invalid_option", field, fmt.Sprintf(
			"a %d×%d viewport at device_scale_factor %g is %d device px per image, over the limit of %d (%d MP); at this size device_scale_factor may be at most %g",
			vp.Width, vp.Height, vp.DeviceScaleFactor, img, capture.MaxImagePixels, capture.MaxImagePixels/1_000_000, maxDSF))
		return
	}

	most := int64(capture.MaxJobPixels / img) // images of one viewport the job may hold
	var images int64
	over := func(n int64, field, what string) bool {
		images += n
		if images <= most {
			return false
		}
		errs.Add("invalid_option", field, fmt.Sprintf(
			"%s brings the job's screenshots to %d images of %d device px (%d×%d at device_scale_factor %g), %d px in the worst case, over the job's budget of %d (%d MP); at this viewport a job may hold at most %d such images",
			what, images, img, vp.Width, vp.Height, vp.DeviceScaleFactor, images*img, capture.MaxJobPixels, capture.MaxJobPixels/1_000_000, most))
		return true
	}
	if o.wantsScreenshot() {
		// Outside segments mode one image: it alone never passes the job's budget.
		n := int64(1)
		field := blame(batch, batchPrefix, target, targetPrefix, func(in *OptionsInput) bool {
			return in.Screenshot != nil && in.Screenshot.MaxSegments != nil
		}) + ".screenshot.max_segments"
		if o.Screenshot.Mode == capture.ModeSegments {
			n = int64(capture.NormalizeMaxSegments(float64(o.Screenshot.MaxSegments)))
		}
		if over(n, field, fmt.Sprintf("screenshot.max_segments %d", n)) {
			return
		}
	}
	actionsPrefix := blame(batch, batchPrefix, target, targetPrefix, func(in *OptionsInput) bool { return in.Actions != nil })
	for i, a := range o.Actions {
		if a.Type != capture.ActionScreenshot {
			continue
		}
		n, field := int64(1), fmt.Sprintf("%s.actions[%d]", actionsPrefix, i)
		if a.Mode == capture.ModeSegments {
			n = int64(capture.NormalizeMaxSegments(float64(a.MaxSegments)))
			field += ".max_segments"
		}
		if over(n, field, fmt.Sprintf("the screenshot action %q", a.Name)) {
			return
		}
	}
}

// imagePixels is one viewport image in device px, rounded as capture rounds.
func imagePixels(vp Viewport) int64 {
	w := int64(math.Round(float64(vp.Width) * vp.DeviceScaleFactor))
	h := int64(math.Round(float64(vp.Height) * vp.DeviceScaleFactor))
	return max(w*h, 1)
}

// wantsScreenshot reports whether the screenshot output is asked (no list: screenshots only).
func (o Options) wantsScreenshot() bool {
	return len(o.Outputs) == 0 || slices.Contains(o.Outputs, capture.OutputScreenshot)
}
