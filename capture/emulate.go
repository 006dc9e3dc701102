package capture

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// Emulate is what the page is told about its visitor. The zero value emulates nothing.
//
// The tab is reused across jobs, so applyEmulation sets the whole state at the start of every
// job, "nothing" included: no setting of one job survives into the next. Cookies need no
// undoing: the clean slate clears the context's cookies after every job.
type Emulate struct {
	UserAgent     string            `json:"user_agent,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"` // extra request headers; the caller refused Host, Cookie, hop-by-hop, Proxy-*
	Cookies       []Cookie          `json:"cookies,omitempty"`
	Locale        string            `json:"locale,omitempty"`       // BCP 47; also sent as Accept-Language
	Timezone      string            `json:"timezone,omitempty"`     // IANA
	ColorScheme   string            `json:"color_scheme,omitempty"` // "", "light", "dark"
	ReducedMotion bool              `json:"reduced_motion,omitempty"`
	Media         string            `json:"media,omitempty"` // "", "screen", "print"
	// Device names the preset the viewport and the fields above were resolved
	// from; capture reads only the resolved values.
	Device string `json:"device,omitempty"`
	Mobile bool   `json:"mobile,omitempty"` // Emulation.setDeviceMetricsOverride mobile (see navigate)
	Touch  bool   `json:"touch,omitempty"`
}

// Cookie is set in the tab's browser context before navigating. Domain or URL is required.
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain,omitempty"`
	URL      string  `json:"url,omitempty"`
	Path     string  `json:"path,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	HTTPOnly bool    `json:"http_only,omitempty"`
	SameSite string  `json:"same_site,omitempty"` // "", "Strict", "Lax", "None"
	Expires  float64 `json:"expires,omitempty"`   // unix seconds; 0 = session cookie
}

// maxTouchPoints is what navigator.maxTouchPoints reports with Emulate.Touch.
const maxTouchPoints = 5

// applyEmulation sets the job's complete emulation state on the tab and logs each step that
// sets something.
func (t *tab) applyEmulation(p *rod.Page, req Request, res *Result) error {
	e := req.Emulate
	// The overrides live on the tab and survive navigations, so a job that wants none on a
	// tab that has none (the common case) sends nothing but its cookies.
	key := emulationKey(e)
	if key == noEmulation && t.emulated == noEmulation {
		return t.setCookies(p, e, res)
	}
	t.emulated = "?" // unknown until every override below is applied
	for _, st := range emulationSteps(p, e) {
		start := time.Now()
		err := st.call()
		if st.active || err != nil {
			logStep(res, st.typ, st.target, start, err, "")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", st.typ, err)
		}
	}
	if err := t.setCookies(p, e, res); err != nil {
		return err
	}
	t.emulated = key
	if e.Mobile {
		logStep(res, "emulate.mobile", "", time.Now(), nil, "")
	}
	return nil
}

// emulationStep is one override: its log type and target, whether it sets something
// (active: then it is logged), and the call that sets or removes it.
type emulationStep struct {
	typ, target string
	active      bool
	call        func() error
}

// emulationSteps are the overrides of e in order, each of which removes its override when
// e does not ask for it.
func emulationSteps(p *rod.Page, e Emulate) []emulationStep {
	headers := proto.NetworkHeaders{}
	for k, v := range e.Headers {
		headers[k] = gson.New(v)
	}
	motion := ""
	if e.ReducedMotion {
		motion = "reduce"
	}
	media := strings.Trim(e.Media+" "+e.ColorScheme+" "+motion, " ")
	return []emulationStep{
		// An empty user agent or accept-language removes the override.
		{"emulate.user_agent", e.UserAgent, e.UserAgent != "" || e.Locale != "", func() error {
			return proto.EmulationSetUserAgentOverride{UserAgent: e.UserAgent, AcceptLanguage: e.Locale}.Call(p)
		}},
		{"emulate.headers", strings.Join(slices.Sorted(maps.Keys(e.Headers)), ","), len(headers) > 0, func() error {
			return proto.NetworkSetExtraHTTPHeaders{Headers: headers}.Call(p)
		}},
		{"emulate.locale", e.Locale, e.Locale != "", func() error {
			return proto.EmulationSetLocaleOverride{Locale: e.Locale}.Call(p)
		}},
		{"emulate.timezone", e.Timezone, e.Timezone != "", func() error {
			return proto.EmulationSetTimezoneOverride{TimezoneID: e.Timezone}.Call(p)
		}},
		{"emulate.media", media, media != "", func() error {
			// Features must be listed to be reset: an empty value removes that override.
			return proto.EmulationSetEmulatedMedia{Media: e.Media, Features: []*proto.EmulationMediaFeature{
				{Name: "prefers-color-scheme", Value: e.ColorScheme},
				{Name: "prefers-reduced-motion", Value: motion},
			}}.Call(p)
		}},
		{"emulate.touch", "", e.Touch, func() error {
			n := maxTouchPoints
			if !e.Touch {
				return proto.EmulationSetTouchEmulationEnabled{Enabled: false}.Call(p)
			}
			return proto.EmulationSetTouchEmulationEnabled{Enabled: true, MaxTouchPoints: &n}.Call(p)
		}},
	}
}

// noEmulation is the key of a tab without overrides, as a new tab starts.
var noEmulation = emulationKey(Emulate{})

// emulationKey identifies the overrides of e (cookies are per job and not included).
func emulationKey(e Emulate) string {
	e.Cookies = nil
	b, _ := json.Marshal(e)
	return string(b)
}

// setCookies adds the job's cookies to the tab's browser context; the clean slate between jobs
// removes them.
func (t *tab) setCookies(p *rod.Page, e Emulate, res *Result) error {
	if len(e.Cookies) > 0 {
		cookies := make([]*proto.NetworkCookieParam, len(e.Cookies))
		names := make([]string, len(e.Cookies))
		for i, c := range e.Cookies {
			cp := &proto.NetworkCookieParam{Name: c.Name, Value: c.Value, URL: c.URL, Domain: c.Domain,
				Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: proto.NetworkCookieSameSite(c.SameSite)}
			if c.Expires > 0 {
				cp.Expires = proto.TimeSinceEpoch(c.Expires)
			}
			cookies[i], names[i] = cp, c.Name
		}
		start := time.Now()
		// browserContextId is only accepted on the browser target.
		err := proto.StorageSetCookies{Cookies: cookies, BrowserContextID: t.contextID}.Call(t.inst.rb.Context(p.GetContext()))
		logStep(res, "emulate.cookies", strings.Join(names, ","), start, err, "")
		if err != nil {
			return fmt.Errorf("emulate.cookies: %w", err)
		}
	}
	return nil
}
