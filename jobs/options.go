package jobs

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snapq/snapq/capture"
)

// Option defaults and limits. They are documented in web/openapi.json (OptionsInput).
const (
	DefaultViewportWidth   = 1280
	DefaultViewportHeight  = 720
	MinViewportSide        = 100
	MaxViewportSide        = 4096
	MaxDeviceScaleFactor   = 4
	DefaultSelectorTimeout = 10 * time.Second
	MaxSelectorTimeout     = 120 * time.Second
	MaxDelay               = 30 * time.Second
	DefaultJobTimeout      = 60 * time.Second
	MinJobTimeout          = time.Second
	MaxJobTimeout          = 300 * time.Second
	MaxSelectorLength      = 1024
	DefaultPDFMarginMM     = 10
	MaxPDFMarginMM         = 50
	MinPDFScale            = 0.1
	MaxPDFScale            = 2
	MaxPageRangesLength    = 200
	MinMarkdownMaxChars    = 1_000
	MaxMarkdownMaxChars    = 1_000_000
	// MaxQualityWait bounds quality.retry_wait_ms and quality.challenge_wait_ms.
	MaxQualityWait = 60 * time.Second
)

// outputNames are the accepted values of options.outputs, in documentation order.
var outputNames = []string{capture.OutputScreenshot, capture.OutputHTML, capture.OutputText,
	capture.OutputLinks, capture.OutputMetadata, capture.OutputPDF, capture.OutputMarkdown}

// pageRangesRe is Chromium's page range syntax, restricted to closed ranges: "1-3,5".
var pageRangesRe = regexp.MustCompile(`^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$`)

// OptionsInput is the wire form of capture options. Every field is optional so
// a target's options can override a batch's field by field.
type OptionsInput struct {
	Viewport   *ViewportInput   `json:"viewport,omitempty"`
	Screenshot *ScreenshotInput `json:"screenshot,omitempty"`
	Wait       *WaitInput       `json:"wait,omitempty"`
	TimeoutMS  *float64         `json:"timeout_ms,omitempty"`
	// Outputs replaces the batch's list as a whole (lists are not merged).
	Outputs *[]string `json:"outputs,omitempty"`
	PDF     *PDFInput `json:"pdf,omitempty"`
	// MarkdownMaxChars caps the markdown output.
	MarkdownMaxChars *float64 `json:"markdown_max_chars,omitempty"`
	// Block: an absent resource_types takes the default, an empty list blocks nothing.
	Block *BlockInput `json:"block,omitempty"`
	// Page preparation (prepare.go).
	Emulate *EmulateInput `json:"emulate,omitempty"`
	Prepare *PrepareInput `json:"prepare,omitempty"`
	Scroll  *ScrollInput  `json:"scroll,omitempty"`
	// Actions replaces the batch's list as a whole (actions.go).
	Actions          *[]ActionInput `json:"actions,omitempty"`
	ActionsTimeoutMS *float64       `json:"actions_timeout_ms,omitempty"`
	// HostConcurrency caps this job's target host's captures across all
	// workers (hostcap.go).
	HostConcurrency *float64 `json:"host_concurrency,omitempty"`
	// AuthProfile names the API key's auth profile whose login the job's
	// page is captured with (authprofile).
	AuthProfile *string `json:"auth_profile,omitempty"`
	// IgnoreHTTPSErrors loads a page whose TLS certificate is not trusted
	// (staging sites with a self-signed certificate).
	IgnoreHTTPSErrors *bool `json:"ignore_https_errors,omitempty"`
	// MaxAgeS lets the job reuse a succeeded capture of the same URL with
	// the same options by the same API key finished at most this many
	// seconds ago instead of rendering again (cache.go); 0: always render.
	MaxAgeS *float64 `json:"max_age_s,omitempty"`
	// Quality shapes the quality verdict's retry and the bot-check wait
	// (capture/quality.go).
	Quality *QualityInput `json:"quality,omitempty"`
}

// QualityInput is the wire form of Quality.
type QualityInput struct {
	// Retry retakes a suspect capture once after escalated waits (default true).
	Retry           *bool    `json:"retry,omitempty"`
	RetryWaitMS     *float64 `json:"retry_wait_ms,omitempty"`
	ChallengeWaitMS *float64 `json:"challenge_wait_ms,omitempty"`
}

// BlockInput is the wire form of Block.
type BlockInput struct {
	ResourceTypes *[]string `json:"resource_types,omitempty"`
	URLPatterns   *[]string `json:"url_patterns,omitempty"`
	// Ads, Trackers, ChatWidgets, Social and CookieBanners block by the
	// worker's filter lists (default false: a suite's baselines are not
	// changed under it).
	Ads           *bool `json:"ads,omitempty"`
	Trackers      *bool `json:"trackers,omitempty"`
	ChatWidgets   *bool `json:"chat_widgets,omitempty"`
	Social        *bool `json:"social,omitempty"`
	CookieBanners *bool `json:"cookie_banners,omitempty"`
}

// PDFInput is the wire form of PDF.
type PDFInput struct {
	Paper           *string  `json:"paper,omitempty"`
	Landscape       *bool    `json:"landscape,omitempty"`
	MarginMM        *float64 `json:"margin_mm,omitempty"`
	PrintBackground *bool    `json:"print_background,omitempty"`
	Scale           *float64 `json:"scale,omitempty"`
	PageRanges      *string  `json:"page_ranges,omitempty"`
	// PreferCSSPageSize: the page's CSS @page size wins over paper.
	PreferCSSPageSize *bool `json:"prefer_css_page_size,omitempty"`
}

// ViewportInput is the wire form of Viewport.
type ViewportInput struct {
	Width             *float64 `json:"width,omitempty"`
	Height            *float64 `json:"height,omitempty"`
	DeviceScaleFactor *float64 `json:"device_scale_factor,omitempty"`
}

// ScreenshotInput is the wire form of Screenshot.
type ScreenshotInput struct {
	Mode        *string  `json:"mode,omitempty"`
	Format      *string  `json:"format,omitempty"`
	Quality     *float64 `json:"quality,omitempty"`
	MaxSegments *float64 `json:"max_segments,omitempty"`
	Selector    *string  `json:"selector,omitempty"`
}

// WaitInput is the wire form of Wait.
type WaitInput struct {
	Until             *string  `json:"until,omitempty"`
	Selector          *string  `json:"selector,omitempty"`
	SelectorTimeoutMS *float64 `json:"selector_timeout_ms,omitempty"`
	DelayMS           *float64 `json:"delay_ms,omitempty"`
	BestAttempt       *bool    `json:"best_attempt,omitempty"`
	// Readiness waits (prepare.go).
	Fonts          *bool    `json:"fonts,omitempty"`
	Images         *bool    `json:"images,omitempty"`
	HiddenSelector *string  `json:"hidden_selector,omitempty"`
	NetworkIdleMS  *float64 `json:"network_idle_ms,omitempty"`
}

// Options are resolved capture options: every field has its final value.
// They are stored with the job, so a worker needs nothing else.
type Options struct {
	Viewport   Viewport   `json:"viewport"`
	Screenshot Screenshot `json:"screenshot"`
	Wait       Wait       `json:"wait"`
	TimeoutMS  int        `json:"timeout_ms"`
	// Outputs is nil in jobs stored before outputs existed; that means screenshots only.
	Outputs []string `json:"outputs,omitempty"`
	PDF     PDF      `json:"pdf"`
	// MarkdownMaxChars is 0 in jobs stored before it existed; that means the default.
	MarkdownMaxChars int `json:"markdown_max_chars,omitempty"`
	// Block is what the page must not load (absent in jobs stored before it existed: nothing).
	Block Block `json:"block"`
	// Page preparation (prepare.go); absent in jobs stored before it existed: none.
	Emulate Emulate `json:"emulate,omitzero"`
	Prepare Prepare `json:"prepare,omitzero"`
	Scroll  Scroll  `json:"scroll,omitzero"`
	// Actions run after the waits (actions.go); ActionsTimeoutMS 0 means the default.
	Actions          []Action `json:"actions,omitempty"`
	ActionsTimeoutMS int      `json:"actions_timeout_ms,omitempty"`
	// Stabilize > 1 retakes the screenshot until two consecutive captures
	// match, at most this many times; set by suite runs, not by the API.
	Stabilize int `json:"stabilize,omitempty"`
	// MaskSelectors are a suite's ignore selectors: their boxes are measured
	// before the capture and masked in the comparison.
	MaskSelectors []string `json:"mask_selectors,omitempty"`
	// BoxTree records the page's elements for the comparison's attribution;
	// set by suite runs, not by the API.
	BoxTree bool `json:"box_tree,omitempty"`
	// KeepCheckpoints stores, when a required action fails, the images the
	// screenshot actions before it took (a suite's journey checkpoints); set
	// by suite runs, not by the API.
	KeepCheckpoints bool `json:"keep_checkpoints,omitempty"`
	// HostConcurrency is the host cap the worker applies (hostcap.go); 0,
	// as in jobs stored before it existed, means the worker's default.
	HostConcurrency int `json:"host_concurrency,omitempty"`
	// AuthProfile is the name of the batch owner's auth profile the worker
	// seeds the page's context with; empty: none, the context starts clean.
	AuthProfile string `json:"auth_profile,omitempty"`
	// IgnoreHTTPSErrors accepts untrusted TLS certificates (capture.Request).
	IgnoreHTTPSErrors bool `json:"ignore_https_errors,omitempty"`
	// MaxAgeS is how old a cached capture the job may reuse (cache.go);
	// 0, as in jobs stored before it existed, means none: always render.
	// It does not take part in the cache's options hash.
	MaxAgeS int `json:"max_age_s,omitempty"`
	// Quality: the retry of a suspect capture and the bot-check wait; the zero
	// value (and jobs stored before it existed) retries with the defaults.
	Quality Quality `json:"quality,omitzero"`
}

// defaultBlockTypes are blocked, unless block.resource_types says otherwise, for jobs whose
// outputs show nothing of the page's look (no screenshot, no pdf): they load faster.
var defaultBlockTypes = []string{capture.ResourceImage, capture.ResourceFont, capture.ResourceMedia}

// The resolved options that capture takes as they are are capture's own
// types: an option added to one of them is stored and passed on with no
// copying code.
type (
	Viewport   = capture.Viewport
	Screenshot = capture.Screenshot
	PDF        = capture.PDFOptions
	Block      = capture.Block
	Emulate    = capture.Emulate
	Prepare    = capture.Prepare
	Quality    = capture.QualityOptions
	// CookieInput is one cookie to set before the page loads; domain or url is required.
	CookieInput = capture.Cookie
)

// Wait says when the page is ready.
type Wait struct {
	Until             string `json:"until"`
	Selector          string `json:"selector,omitempty"`
	SelectorTimeoutMS int    `json:"selector_timeout_ms"`
	DelayMS           int    `json:"delay_ms"`
	BestAttempt       bool   `json:"best_attempt"`
	// Readiness waits (prepare.go); NetworkIdleMS 0 means capture.NetworkIdleQuiet.
	Fonts          bool   `json:"fonts,omitempty"`
	Images         bool   `json:"images,omitempty"`
	HiddenSelector string `json:"hidden_selector,omitempty"`
	NetworkIdleMS  int    `json:"network_idle_ms,omitempty"`
}

// DefaultOptions are the options of a job that asks for nothing.
func DefaultOptions() Options {
	return Options{
		Viewport:   Viewport{Width: DefaultViewportWidth, Height: DefaultViewportHeight, DeviceScaleFactor: 1},
		Screenshot: Screenshot{Mode: capture.ModeSegments, Format: capture.FormatPNG, MaxSegments: capture.DefaultMaxSegments},
		Wait:       Wait{Until: capture.UntilLoad, SelectorTimeoutMS: int(DefaultSelectorTimeout / time.Millisecond)},
		TimeoutMS:  int(DefaultJobTimeout / time.Millisecond),
		Outputs:    []string{capture.OutputScreenshot},
		PDF:        PDF{Paper: capture.PaperA4, MarginMM: DefaultPDFMarginMM, PrintBackground: true, Scale: 1},

		MarkdownMaxChars: capture.DefaultMarkdownMaxChars,
		Block:            Block{ResourceTypes: []string{}},
	}
}

// ResolveOptions applies batch options, then target options, over the
// defaults, validating every value given. Errors, in errs, name fields relative
// to their own prefix (for example "options.viewport.width").
func ResolveOptions(batch *OptionsInput, batchPrefix string, target *OptionsInput, targetPrefix string, errs *FieldErrors) Options {
	o := DefaultOptions()
	n := len(*errs)
	o.apply(batch, batchPrefix, errs)
	o.apply(target, targetPrefix, errs)
	o.applyDevice(batch, target) // prepare.go
	// actions.go
	o.checkActionsTimeout(batch, batchPrefix, target, targetPrefix, errs)
	typesGiven := func(in *OptionsInput) bool { return in != nil && in.Block != nil && in.Block.ResourceTypes != nil }
	if !typesGiven(batch) && !typesGiven(target) &&
		!slices.Contains(o.Outputs, capture.OutputScreenshot) && !slices.Contains(o.Outputs, capture.OutputPDF) {
		o.Block.ResourceTypes = slices.Clone(defaultBlockTypes)
	}
	if len(*errs) == n && o.Screenshot.Quality != 0 && o.Screenshot.Format == capture.FormatPNG {
		field := blame(batch, batchPrefix, target, targetPrefix,
			func(in *OptionsInput) bool { return in.Screenshot != nil && in.Screenshot.Quality != nil }) + ".screenshot.quality"
		errs.Add("invalid_option", field, "quality applies to jpeg and webp only; png is lossless")
	}
	if len(*errs) == n {
		o.checkBudget(batch, batchPrefix, target, targetPrefix, errs) // budget.go
	}
	return o
}

// apply validates in (at prefix) and applies its values over o; errors go to errs.
func (o *Options) apply(in *OptionsInput, prefix string, errs *FieldErrors) {
	if in == nil {
		return
	}
	v := validator{errs: errs}
	o.applyViewport(in.Viewport, prefix+".viewport", &v)
	o.applyScreenshot(in.Screenshot, prefix+".screenshot", &v)
	o.applyWait(in.Wait, prefix+".wait", &v)
	v.intIn(&o.TimeoutMS, in.TimeoutMS, prefix+".timeout_ms", int(MinJobTimeout/time.Millisecond), int(MaxJobTimeout/time.Millisecond))
	if in.Outputs != nil {
		v.outputs(&o.Outputs, *in.Outputs, prefix+".outputs")
	}
	v.intIn(&o.MarkdownMaxChars, in.MarkdownMaxChars, prefix+".markdown_max_chars", MinMarkdownMaxChars, MaxMarkdownMaxChars)
	if b := in.Block; b != nil {
		v.block(&o.Block, b, prefix+".block")
	}
	o.applyPage(in, prefix, &v) // prepare.go
	if in.Actions != nil {
		v.actions(&o.Actions, *in.Actions, prefix+".actions") // actions.go
	}
	v.intIn(&o.ActionsTimeoutMS, in.ActionsTimeoutMS, prefix+".actions_timeout_ms", 1, int(MaxJobTimeout/time.Millisecond))
	v.intIn(&o.HostConcurrency, in.HostConcurrency, prefix+".host_concurrency", 1, HardMaxHostConcurrency)
	if in.AuthProfile != nil {
		if *in.AuthProfile != "" && !ValidProfileName(*in.AuthProfile) {
			v.add(prefix+".auth_profile", "must be an auth profile's name: 1-64 of a-z, 0-9, '-', '_', starting with a letter or digit")
		} else {
			o.AuthProfile = *in.AuthProfile
		}
	}
	if in.IgnoreHTTPSErrors != nil {
		o.IgnoreHTTPSErrors = *in.IgnoreHTTPSErrors
	}
	v.intIn(&o.MaxAgeS, in.MaxAgeS, prefix+".max_age_s", 0, MaxCacheAgeS) // cache.go
	o.applyQuality(in.Quality, prefix+".quality", &v)
	o.applyPDF(in.PDF, prefix+".pdf", &v)
}

// applyViewport validates and applies the viewport options at p.
func (o *Options) applyViewport(vp *ViewportInput, p string, v *validator) {
	if vp == nil {
		return
	}
	v.intIn(&o.Viewport.Width, vp.Width, p+".width", MinViewportSide, MaxViewportSide)
	v.intIn(&o.Viewport.Height, vp.Height, p+".height", MinViewportSide, MaxViewportSide)
	if f := vp.DeviceScaleFactor; f != nil {
		if !(*f > 0 && *f <= MaxDeviceScaleFactor) {
			v.add(p+".device_scale_factor", fmt.Sprintf("must be greater than 0 and at most %d", MaxDeviceScaleFactor))
		} else {
			o.Viewport.DeviceScaleFactor = *f
		}
	}
}

// applyScreenshot validates and applies the screenshot options at p.
func (o *Options) applyScreenshot(s *ScreenshotInput, p string, v *validator) {
	if s == nil {
		return
	}
	v.enum(&o.Screenshot.Mode, s.Mode, p+".mode", capture.ModeSegments, capture.ModeFull, capture.ModeViewport)
	v.enum(&o.Screenshot.Format, s.Format, p+".format", capture.FormatPNG, capture.FormatJPEG, capture.FormatWebP)
	v.intIn(&o.Screenshot.Quality, s.Quality, p+".quality", 1, 100)
	v.intIn(&o.Screenshot.MaxSegments, s.MaxSegments, p+".max_segments", 1, capture.HardMaxSegments)
}

// applyWait validates and applies the wait options at p.
func (o *Options) applyWait(w *WaitInput, p string, v *validator) {
	if w == nil {
		return
	}
	v.enum(&o.Wait.Until, w.Until, p+".until", capture.UntilLoad, capture.UntilDOMContentLoaded, capture.UntilNetworkIdle)
	v.selector(&o.Wait.Selector, w.Selector, p+".selector")
	v.intIn(&o.Wait.SelectorTimeoutMS, w.SelectorTimeoutMS, p+".selector_timeout_ms", 0, int(MaxSelectorTimeout/time.Millisecond))
	v.intIn(&o.Wait.DelayMS, w.DelayMS, p+".delay_ms", 0, int(MaxDelay/time.Millisecond))
	if w.BestAttempt != nil {
		o.Wait.BestAttempt = *w.BestAttempt
	}
}

// applyQuality validates and applies the quality-check options at p.
func (o *Options) applyQuality(q *QualityInput, p string, v *validator) {
	if q == nil {
		return
	}
	if q.Retry != nil {
		o.Quality.NoRetry = !*q.Retry
	}
	v.intIn(&o.Quality.RetryWaitMS, q.RetryWaitMS, p+".retry_wait_ms", 100, int(MaxQualityWait/time.Millisecond))
	v.intIn(&o.Quality.ChallengeWaitMS, q.ChallengeWaitMS, p+".challenge_wait_ms", 100, int(MaxQualityWait/time.Millisecond))
}

// applyPDF validates and applies the PDF options at p.
func (o *Options) applyPDF(d *PDFInput, p string, v *validator) {
	if d == nil {
		return
	}
	v.enum(&o.PDF.Paper, d.Paper, p+".paper", capture.Papers()...)
	if d.Landscape != nil {
		o.PDF.Landscape = *d.Landscape
	}
	v.floatIn(&o.PDF.MarginMM, d.MarginMM, p+".margin_mm", 0, MaxPDFMarginMM)
	if d.PrintBackground != nil {
		o.PDF.PrintBackground = *d.PrintBackground
	}
	v.floatIn(&o.PDF.Scale, d.Scale, p+".scale", MinPDFScale, MaxPDFScale)
	v.flag(&o.PDF.PreferCSSPageSize, d.PreferCSSPageSize)
	if r := d.PageRanges; r != nil {
		if *r != "" && (len(*r) > MaxPageRangesLength || !validPageRanges(*r)) {
			v.add(p+".page_ranges", `must be pages and ranges like "1-3,5" (pages count from 1, a range's end not below its start), or "" for all pages`)
		} else {
			o.PDF.PageRanges = strings.ReplaceAll(*r, " ", "")
		}
	}
}

// JobTimeout is the whole-job budget.
func (o Options) JobTimeout() time.Duration { return time.Duration(o.TimeoutMS) * time.Millisecond }

// CaptureRequest turns resolved options into the renderer's request.
func (o Options) CaptureRequest(url, name string) capture.Request {
	r := capture.Request{
		URL:        url,
		Name:       name,
		Timeout:    o.JobTimeout(),
		Viewport:   o.Viewport,
		Screenshot: o.Screenshot,
		Wait: capture.Wait{
			Until:           o.Wait.Until,
			Selector:        o.Wait.Selector,
			SelectorTimeout: time.Duration(o.Wait.SelectorTimeoutMS) * time.Millisecond,
			Delay:           time.Duration(o.Wait.DelayMS) * time.Millisecond,
			BestAttempt:     o.Wait.BestAttempt,
		},
		Outputs:          o.Outputs,
		PDF:              o.PDF,
		MarkdownMaxChars: o.MarkdownMaxChars,
		Block:            o.Block,
		Emulate:          o.Emulate,
		Prepare:          o.Prepare,
	}
	r.Screenshot.MaxSegments = capture.NormalizeMaxSegments(float64(o.Screenshot.MaxSegments))
	o.capturePage(&r) // prepare.go
	// actions.go
	r.Actions, r.ActionsTimeout = captureActions(o.Actions), o.actionsTimeout()
	r.Stabilize, r.MaskSelectors, r.BoxTree = o.Stabilize, o.MaskSelectors, o.BoxTree
	r.KeepCheckpoints = o.KeepCheckpoints
	r.IgnoreHTTPSErrors = o.IgnoreHTTPSErrors
	r.Quality = o.Quality
	return r
}

// profileNameRe is the form of an auth profile's name.
var profileNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidProfileName reports whether name is an auth profile's name.
func ValidProfileName(name string) bool { return profileNameRe.MatchString(name) }

// validPageRanges accepts "1-3,5": pages from 1, each range's end at least its start.
func validPageRanges(s string) bool {
	if !pageRangesRe.MatchString(s) {
		return false
	}
	for _, part := range strings.Split(strings.ReplaceAll(s, " ", ""), ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if found {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 1 || b < a {
			return false
		}
	}
	return true
}

// outputs validates a list of output names: known, not repeated, at least one.
func (v *validator) outputs(dst *[]string, src []string, field string) {
	if len(src) == 0 {
		v.add(field, "must list at least one of "+joinQuoted(outputNames))
		return
	}
	n := len(*v.errs)
	seen := make(map[string]bool, len(src))
	for i, o := range src {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case !slices.Contains(outputNames, o):
			v.add(f, "must be one of "+joinQuoted(outputNames))
		case seen[o]:
			v.add(f, fmt.Sprintf("%q is listed twice", o))
		}
		seen[o] = true
	}
	if len(*v.errs) == n {
		*dst = slices.Clone(src)
	}
}

// block validates block: known resource types without repeats, at most MaxBlockPatterns
// non-empty URL patterns of at most MaxBlockPatternLength characters.
func (v *validator) block(dst *Block, in *BlockInput, field string) {
	if in.ResourceTypes != nil {
		n := len(*v.errs)
		seen := map[string]bool{}
		for i, rt := range *in.ResourceTypes {
			f := fmt.Sprintf("%s.resource_types[%d]", field, i)
			switch {
			case !slices.Contains(capture.ResourceTypes(), rt):
				v.add(f, "must be one of "+joinQuoted(capture.ResourceTypes()))
			case seen[rt]:
				v.add(f, fmt.Sprintf("%q is listed twice", rt))
			}
			seen[rt] = true
		}
		if len(*v.errs) == n {
			dst.ResourceTypes = append([]string{}, *in.ResourceTypes...) // [] stays [], not nil
		}
	}
	for _, f := range []struct {
		dst *bool
		src *bool
	}{{&dst.Ads, in.Ads}, {&dst.Trackers, in.Trackers}, {&dst.ChatWidgets, in.ChatWidgets},
		{&dst.Social, in.Social}, {&dst.CookieBanners, in.CookieBanners}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if in.URLPatterns != nil {
		ps := *in.URLPatterns
		n := len(*v.errs)
		if len(ps) > capture.MaxBlockPatterns {
			v.add(field+".url_patterns", fmt.Sprintf("at most %d patterns", capture.MaxBlockPatterns))
		}
		for i, p := range ps {
			if p == "" || len(p) > capture.MaxBlockPatternLength {
				v.add(fmt.Sprintf("%s.url_patterns[%d]", field, i),
					fmt.Sprintf("must be 1 to %d characters", capture.MaxBlockPatternLength))
			}
		}
		if len(*v.errs) == n {
			dst.URLPatterns = slices.Clone(ps)
		}
	}
}

func (v *validator) floatIn(dst *float64, src *float64, field string, lo, hi float64) {
	if src == nil {
		return
	}
	f := *src
	if math.IsNaN(f) || math.IsInf(f, 0) || f < lo || f > hi {
		v.add(field, fmt.Sprintf("must be a number from %g to %g", lo, hi))
		return
	}
	*dst = f
}

// validator copies valid values and records the problems of the others in errs.
type validator struct{ errs *FieldErrors }

func (v *validator) add(field, msg string) { v.errs.Add("invalid_option", field, msg) }

func (v *validator) intIn(dst *int, src *float64, field string, lo, hi int) {
	if src == nil {
		return
	}
	f := *src
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		v.add(field, "must be a whole number from "+itoa(lo)+" to "+itoa(hi))
		return
	}
	*dst = int(f)
}

// selector copies a selector of at most MaxSelectorLength bytes.
func (v *validator) selector(dst *string, src *string, field string) {
	if src == nil {
		return
	}
	if len(*src) > MaxSelectorLength {
		v.add(field, fmt.Sprintf("must be at most %d characters", MaxSelectorLength))
		return
	}
	*dst = *src
}

// flag copies a boolean that was given.
func (v *validator) flag(dst *bool, src *bool) {
	if src != nil {
		*dst = *src
	}
}

// blame is the prefix of the options that gave a field: the target's when it
// gave one, else the batch's.
func blame(batch *OptionsInput, batchPrefix string, target *OptionsInput, targetPrefix string, gave func(*OptionsInput) bool) string {
	if target != nil && gave(target) {
		return targetPrefix
	}
	return batchPrefix
}

func (v *validator) enum(dst *string, src *string, field string, allowed ...string) {
	if src == nil {
		return
	}
	for _, a := range allowed {
		if *src == a {
			*dst = a
			return
		}
	}
	v.add(field, "must be one of "+joinQuoted(allowed))
}
