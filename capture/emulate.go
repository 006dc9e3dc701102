package capture

import (
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
	UserAgent     string
	Headers       map[string]string // extra request headers; the caller refused Host, Cookie, hop-by-hop, Proxy-*
	Cookies       []Cookie
	Locale        string // BCP 47; also sent as Accept-Language
	Timezone      string // IANA
	ColorScheme   string // "", "light", "dark"
	ReducedMotion bool
	Media         string // "", "screen", "print"
	Mobile        bool   // Emulation.setDeviceMetricsOverride mobile (see navigate)
	Touch         bool
}

// Cookie is set in the tab's browser context before navigating. Domain or URL is required.
type Cookie struct {
	Name, Value string
	Domain, URL string
	Path        string
	Secure      bool
	HTTPOnly    bool
	SameSite    string // "", "Strict", "Lax", "None"
	Expires     int64  // unix seconds; 0 = session cookie
}

// maxTouchPoints is what navigator.maxTouchPoints reports with Emulate.Touch.
const maxTouchPoints = 5

// applyEmulation sets the job's complete emulation state on the tab and logs each step that
// sets something.
func (t *tab) applyEmulation(p *rod.Page, req Request, res *Result) error {
	e := req.Emulate
	step := func(typ, target string, active bool, call func() error) error {
		start := time.Now()
		err := call()
		if active || err != nil {
			logStep(res, typ, target, start, err, "")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", typ, err)
		}
		return nil
	}
	// An empty user agent or accept-language removes the override.
	if err := step("emulate.user_agent", e.UserAgent, e.UserAgent != "" || e.Locale != "", func() error {
		return proto.EmulationSetUserAgentOverride{UserAgent: e.UserAgent, AcceptLanguage: e.Locale}.Call(p)
	}); err != nil {
		return err
	}
	headers := proto.NetworkHeaders{}
	for k, v := range e.Headers {
		headers[k] = gson.New(v)
	}
	names := slices.Sorted(maps.Keys(e.Headers))
	if err := step("emulate.headers", strings.Join(names, ","), len(headers) > 0, func() error {
		return proto.NetworkSetExtraHTTPHeaders{Headers: headers}.Call(p)
	}); err != nil {
		return err
	}
	if err := step("emulate.locale", e.Locale, e.Locale != "", func() error {
		return proto.EmulationSetLocaleOverride{Locale: e.Locale}.Call(p)
	}); err != nil {
		return err
	}
	if err := step("emulate.timezone", e.Timezone, e.Timezone != "", func() error {
		return proto.EmulationSetTimezoneOverride{TimezoneID: e.Timezone}.Call(p)
	}); err != nil {
		return err
	}
	motion := ""
	if e.ReducedMotion {
		motion = "reduce"
	}
	media := strings.Trim(e.Media+" "+e.ColorScheme+" "+motion, " ")
	if err := step("emulate.media", media, media != "", func() error {
		// Features must be listed to be reset: an empty value removes that override.
		return proto.EmulationSetEmulatedMedia{Media: e.Media, Features: []*proto.EmulationMediaFeature{
			{Name: "prefers-color-scheme", Value: e.ColorScheme},
			{Name: "prefers-reduced-motion", Value: motion},
		}}.Call(p)
	}); err != nil {
		return err
	}
	if err := step("emulate.touch", "", e.Touch, func() error {
		n := maxTouchPoints
		if !e.Touch {
			return proto.EmulationSetTouchEmulationEnabled{Enabled: false}.Call(p)
		}
		return proto.EmulationSetTouchEmulationEnabled{Enabled: true, MaxTouchPoints: &n}.Call(p)
	}); err != nil {
		return err
	}
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
		err := step("emulate.cookies", strings.Join(names, ","), true, func() error {
			// browserContextId is only accepted on the browser target.
			return proto.StorageSetCookies{Cookies: cookies, BrowserContextID: t.contextID}.Call(t.inst.rb.Context(p.GetContext()))
		})
		if err != nil {
			return err
		}
	}
	if e.Mobile {
		logStep(res, "emulate.mobile", "", time.Now(), nil, "")
	}
	return nil
}
