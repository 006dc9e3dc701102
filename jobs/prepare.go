package jobs

import (
	"fmt"
	"math"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // emulate.timezone is validated the same on every host

	"github.com/snapq/snapq/capture"
)

// Limits of the emulate, prepare and scroll options and of the extra waits. They are
// documented in web/openapi.json (OptionsInput).
const (
	MaxUserAgentLength   = 512
	MaxEmulateHeaders    = 50
	MaxHeaderValueLength = 4096
	MaxEmulateCookies    = 50
	MaxCookieFieldLength = 4096
	MaxPrepareSelectors  = 50
	MaxPrepareCSS        = 64 << 10
	MaxPrepareScript     = 64 << 10
	MinNetworkIdle       = 100 * time.Millisecond
	MaxNetworkIdle       = 10 * time.Second
	MaxScrollStep        = 100_000
	MaxScrollDelay       = 5 * time.Second
	MaxScrollMax         = 60 * time.Second
)

// EmulateInput is the wire form of Emulate.
type EmulateInput struct {
	UserAgent     *string            `json:"user_agent,omitempty"`
	Headers       *map[string]string `json:"headers,omitempty"`
	Cookies       *[]CookieInput     `json:"cookies,omitempty"`
	Locale        *string            `json:"locale,omitempty"`
	Timezone      *string            `json:"timezone,omitempty"`
	ColorScheme   *string            `json:"color_scheme,omitempty"`
	ReducedMotion *bool              `json:"reduced_motion,omitempty"`
	Media         *string            `json:"media,omitempty"`
	Device        *string            `json:"device,omitempty"`
	Mobile        *bool              `json:"mobile,omitempty"`
	Touch         *bool              `json:"touch,omitempty"`
}

// PrepareInput is the wire form of Prepare.
type PrepareInput struct {
	HideSelectors     *[]string `json:"hide_selectors,omitempty"`
	RemoveSelectors   *[]string `json:"remove_selectors,omitempty"`
	CSS               *string   `json:"css,omitempty"`
	Script            *string   `json:"script,omitempty"`
	ScriptRequired    *bool     `json:"script_required,omitempty"`
	DisableAnimations *bool     `json:"disable_animations,omitempty"`
	// Consent: hide | accept | off (capture/consent.go).
	Consent *string `json:"consent,omitempty"`
	// DeepCapture walks a virtualised list into the text outputs (capture/deep.go).
	DeepCapture *DeepCaptureInput `json:"deep_capture,omitempty"`
}

// DeepCaptureInput is the wire form of prepare.deep_capture.
type DeepCaptureInput struct {
	Enabled   *bool    `json:"enabled,omitempty"`
	MaxItems  *float64 `json:"max_items,omitempty"`
	MaxBytes  *float64 `json:"max_bytes,omitempty"`
	MaxMS     *float64 `json:"max_ms,omitempty"`
	IdleSteps *float64 `json:"idle_steps,omitempty"`
}

// ScrollInput is the wire form of Scroll.
type ScrollInput struct {
	Enabled *bool    `json:"enabled,omitempty"`
	StepPX  *float64 `json:"step_px,omitempty"`
	DelayMS *float64 `json:"delay_ms,omitempty"`
	MaxMS   *float64 `json:"max_ms,omitempty"`
}

// Scroll is the lazy-load scroll (resolved); zero numbers take capture's defaults.
type Scroll struct {
	Enabled bool `json:"enabled,omitempty"`
	StepPX  int  `json:"step_px,omitempty"`
	DelayMS int  `json:"delay_ms,omitempty"`
	MaxMS   int  `json:"max_ms,omitempty"`
}

// Device is an emulation preset. Explicit viewport and user_agent options win over it.
type Device struct {
	Width, Height     int
	DeviceScaleFactor float64
	Mobile, Touch     bool
	UserAgent         string
}

// Devices are the presets of emulate.device.
var Devices = map[string]Device{
	"desktop-1080p": {Width: 1920, Height: 1080, DeviceScaleFactor: 1},
	"iphone-15": {Width: 393, Height: 852, DeviceScaleFactor: 3, Mobile: true, Touch: true,
		UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"},
	"pixel-8": {Width: 412, Height: 915, DeviceScaleFactor: 2.625, Mobile: true, Touch: true,
		UserAgent: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36"},
	"ipad": {Width: 820, Height: 1180, DeviceScaleFactor: 2, Mobile: true, Touch: true,
		UserAgent: "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"},
}

// refusedHeaders may not be set with emulate.headers: the browser or the egress proxy owns
// them (Host, Cookie — use emulate.cookies), or they are hop-by-hop.
var refusedHeaders = []string{"Host", "Cookie", "Connection", "Keep-Alive", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "Content-Length"}

var (
	headerNameRe = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	localeRe     = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`)
)

// applyPage validates and copies the emulate, prepare and scroll options and the extra waits.
func (o *Options) applyPage(in *OptionsInput, prefix string, v *validator) {
	if w := in.Wait; w != nil {
		p := prefix + ".wait"
		if w.Fonts != nil {
			o.Wait.Fonts = *w.Fonts
		}
		if w.Images != nil {
			o.Wait.Images = *w.Images
		}
		v.selector(&o.Wait.HiddenSelector, w.HiddenSelector, p+".hidden_selector")
		v.intIn(&o.Wait.NetworkIdleMS, w.NetworkIdleMS, p+".network_idle_ms",
			int(MinNetworkIdle/time.Millisecond), int(MaxNetworkIdle/time.Millisecond))
	}
	if sc := in.Screenshot; sc != nil {
		v.selector(&o.Screenshot.Selector, sc.Selector, prefix+".screenshot.selector")
	}
	if e := in.Emulate; e != nil {
		v.emulate(&o.Emulate, e, prefix+".emulate")
	}
	if pr := in.Prepare; pr != nil {
		p := prefix + ".prepare"
		v.selectors(&o.Prepare.HideSelectors, pr.HideSelectors, p+".hide_selectors")
		v.selectors(&o.Prepare.RemoveSelectors, pr.RemoveSelectors, p+".remove_selectors")
		v.text(&o.Prepare.CSS, pr.CSS, p+".css", MaxPrepareCSS)
		v.text(&o.Prepare.Script, pr.Script, p+".script", MaxPrepareScript)
		if pr.ScriptRequired != nil {
			o.Prepare.ScriptRequired = *pr.ScriptRequired
		}
		if pr.DisableAnimations != nil {
			o.Prepare.DisableAnimations = *pr.DisableAnimations
		}
		v.enum(&o.Prepare.Consent, pr.Consent, p+".consent", capture.ConsentModes...)
		if d := pr.DeepCapture; d != nil {
			v.deepCapture(&o.Prepare.DeepCapture, d, p+".deep_capture")
		}
	}
	if s := in.Scroll; s != nil {
		p := prefix + ".scroll"
		if s.Enabled != nil {
			o.Scroll.Enabled = *s.Enabled
		}
		v.intIn(&o.Scroll.StepPX, s.StepPX, p+".step_px", 1, MaxScrollStep)
		v.intIn(&o.Scroll.DelayMS, s.DelayMS, p+".delay_ms", 0, int(MaxScrollDelay/time.Millisecond))
		v.intIn(&o.Scroll.MaxMS, s.MaxMS, p+".max_ms", 100, int(MaxScrollMax/time.Millisecond))
	}
}

// applyDevice fills the viewport and user agent from emulate.device where neither the batch
// nor the target gave them explicitly.
func (o *Options) applyDevice(batch, target *OptionsInput) {
	d, ok := Devices[o.Emulate.Device]
	if !ok {
		return
	}
	given := func(f func(*OptionsInput) bool) bool {
		return (batch != nil && f(batch)) || (target != nil && f(target))
	}
	if !given(func(in *OptionsInput) bool { return in.Viewport != nil && in.Viewport.Width != nil }) {
		o.Viewport.Width = d.Width
	}
	if !given(func(in *OptionsInput) bool { return in.Viewport != nil && in.Viewport.Height != nil }) {
		o.Viewport.Height = d.Height
	}
	if !given(func(in *OptionsInput) bool { return in.Viewport != nil && in.Viewport.DeviceScaleFactor != nil }) {
		o.Viewport.DeviceScaleFactor = d.DeviceScaleFactor
	}
	if !given(func(in *OptionsInput) bool { return in.Emulate != nil && in.Emulate.UserAgent != nil }) {
		o.Emulate.UserAgent = d.UserAgent
	}
	if !given(func(in *OptionsInput) bool { return in.Emulate != nil && in.Emulate.Mobile != nil }) {
		o.Emulate.Mobile = d.Mobile
	}
	if !given(func(in *OptionsInput) bool { return in.Emulate != nil && in.Emulate.Touch != nil }) {
		o.Emulate.Touch = d.Touch
	}
}

func (v *validator) emulate(dst *Emulate, e *EmulateInput, p string) {
	if ua := e.UserAgent; ua != nil {
		if len(*ua) > MaxUserAgentLength || strings.ContainsAny(*ua, "\r\n") {
			v.add(p+".user_agent", fmt.Sprintf("must be at most %d characters, on one line", MaxUserAgentLength))
		} else {
			dst.UserAgent = *ua
		}
	}
	if e.Headers != nil {
		v.headers(&dst.Headers, *e.Headers, p+".headers")
	}
	if e.Cookies != nil {
		v.cookies(&dst.Cookies, *e.Cookies, p+".cookies")
	}
	if l := e.Locale; l != nil {
		if *l != "" && (len(*l) > 35 || !localeRe.MatchString(*l)) {
			v.add(p+".locale", `must be a BCP 47 language tag like "de-DE"`)
		} else {
			dst.Locale = *l
		}
	}
	if tz := e.Timezone; tz != nil {
		if *tz != "" && (*tz == "Local" || !validTimezone(*tz)) {
			v.add(p+".timezone", `must be an IANA time zone like "Europe/Berlin"`)
		} else {
			dst.Timezone = *tz
		}
	}
	if e.ColorScheme != nil {
		v.enum(&dst.ColorScheme, e.ColorScheme, p+".color_scheme", "light", "dark")
	}
	if e.ReducedMotion != nil {
		dst.ReducedMotion = *e.ReducedMotion
	}
	if e.Media != nil {
		v.enum(&dst.Media, e.Media, p+".media", "screen", "print")
	}
	if e.Device != nil {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range Devices {
				if !yield(k) {
					return
				}
			}
		})
		v.enum(&dst.Device, e.Device, p+".device", names...)
	}
	if e.Mobile != nil {
		dst.Mobile = *e.Mobile
	}
	if e.Touch != nil {
		dst.Touch = *e.Touch
	}
}

// validTimezone reports an IANA zone name the worker's Go knows (as does Chromium's ICU).
func validTimezone(name string) bool {
	if strings.ContainsAny(name, " \\") || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}

func (v *validator) headers(dst *map[string]string, src map[string]string, field string) {
	n := len(*v.errs)
	if len(src) > MaxEmulateHeaders {
		v.add(field, fmt.Sprintf("at most %d headers", MaxEmulateHeaders))
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range src {
			if !yield(k) {
				return
			}
		}
	}) {
		f := field + "." + k
		canon := textproto.CanonicalMIMEHeaderKey(k)
		switch {
		case !headerNameRe.MatchString(k):
			v.add(f, "is not a valid header name")
		case slices.Contains(refusedHeaders, canon) || strings.HasPrefix(canon, "Proxy-"):
			v.add(f, "may not be set (Host, Cookie, Content-Length, hop-by-hop and Proxy-* headers are refused; use emulate.cookies for cookies)")
		case len(src[k]) > MaxHeaderValueLength || strings.ContainsAny(src[k], "\r\n\x00"):
			v.add(f, fmt.Sprintf("value must be at most %d characters, on one line", MaxHeaderValueLength))
		}
	}
	if len(*v.errs) == n {
		*dst = make(map[string]string, len(src))
		for k, val := range src {
			(*dst)[k] = val
		}
	}
}

func (v *validator) cookies(dst *[]CookieInput, src []CookieInput, field string) {
	n := len(*v.errs)
	if len(src) > MaxEmulateCookies {
		v.add(field, fmt.Sprintf("at most %d cookies", MaxEmulateCookies))
	}
	for i, c := range src {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case c.Name == "" || !headerNameRe.MatchString(c.Name):
			v.add(f+".name", "must be a non-empty cookie name (token characters)")
		case len(c.Value) > MaxCookieFieldLength || strings.ContainsAny(c.Value, ";\r\n\x00"):
			v.add(f+".value", fmt.Sprintf("must be at most %d characters without ';' or line breaks", MaxCookieFieldLength))
		case (c.Domain == "") == (c.URL == ""):
			v.add(f, "give exactly one of domain or url")
		case c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
			v.add(f+".url", "must be an http or https URL")
		case len(c.Domain) > 253 || strings.ContainsAny(c.Domain, " /;\r\n"):
			v.add(f+".domain", "must be a host name like \"example.com\" or \".example.com\"")
		case c.Path != "" && (!strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, ";\r\n")):
			v.add(f+".path", `must start with "/"`)
		case c.SameSite != "" && c.SameSite != "Strict" && c.SameSite != "Lax" && c.SameSite != "None":
			v.add(f+".same_site", `must be one of "Strict", "Lax", "None"`)
		case c.SameSite == "None" && !c.Secure:
			v.add(f+".same_site", `"None" requires secure: true`)
		case math.IsNaN(c.Expires) || c.Expires < 0 || c.Expires > 1e11 || c.Expires != math.Trunc(c.Expires):
			v.add(f+".expires", "must be a whole number of unix seconds")
		}
	}
	if len(*v.errs) == n {
		*dst = slices.Clone(src)
	}
}

func (v *validator) selectors(dst *[]string, src *[]string, field string) {
	if src == nil {
		return
	}
	n := len(*v.errs)
	if len(*src) > MaxPrepareSelectors {
		v.add(field, fmt.Sprintf("at most %d selectors", MaxPrepareSelectors))
	}
	for i, s := range *src {
		if strings.TrimSpace(s) == "" || len(s) > MaxSelectorLength || strings.ContainsAny(s, "{}") {
			v.add(fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("must be a CSS selector of 1 to %d characters, without { or }", MaxSelectorLength))
		}
	}
	if len(*v.errs) == n {
		*dst = slices.Clone(*src)
	}
}

// deepCapture copies prepare.deep_capture within capture's caps.
func (v *validator) deepCapture(dst *capture.DeepCapture, d *DeepCaptureInput, p string) {
	if d.Enabled != nil {
		dst.Enabled = *d.Enabled
	}
	v.intIn(&dst.MaxItems, d.MaxItems, p+".max_items", 1, capture.MaxDeepItems)
	v.intIn(&dst.MaxBytes, d.MaxBytes, p+".max_bytes", 1<<10, capture.MaxDeepBytes)
	v.intIn(&dst.MaxMS, d.MaxMS, p+".max_ms", 100, int(capture.MaxDeepMax/time.Millisecond))
	v.intIn(&dst.IdleSteps, d.IdleSteps, p+".idle_steps", 1, capture.MaxDeepIdleSteps)
}

func (v *validator) text(dst *string, src *string, field string, maxLen int) {
	if src == nil {
		return
	}
	if len(*src) > maxLen {
		v.add(field, fmt.Sprintf("must be at most %d bytes", maxLen))
		return
	}
	*dst = *src
}

// capturePage maps the resolved page options into the capture request.
func (o Options) capturePage(r *capture.Request) {
	r.Wait.Fonts, r.Wait.Images, r.Wait.HiddenSelector = o.Wait.Fonts, o.Wait.Images, o.Wait.HiddenSelector
	r.Wait.NetworkIdle = time.Duration(o.Wait.NetworkIdleMS) * time.Millisecond
	s := o.Scroll
	r.Scroll = capture.Scroll{Enabled: s.Enabled, Step: s.StepPX,
		Delay: time.Duration(s.DelayMS) * time.Millisecond, Max: time.Duration(s.MaxMS) * time.Millisecond}
}
