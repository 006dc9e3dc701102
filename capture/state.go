package capture

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/snapq/snapq/internal/redact"
)

// StorageState is a browser context's login: its cookies and, per origin, local and session
// storage. The JSON shape is Playwright's storageState (sessionStorage is snapq's addition),
// so a file saved by Playwright seeds a job as it is.
type StorageState struct {
	Cookies []StateCookie `json:"cookies"`
	Origins []OriginState `json:"origins"`
}

// StateCookie is one cookie of a StorageState (Playwright's field names).
type StateCookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"` // unix seconds; -1 or 0: a session cookie
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite,omitempty"` // Strict | Lax | None
}

// OriginState is the storage of one origin ("https://app.example.com").
type OriginState struct {
	Origin         string      `json:"origin"`
	LocalStorage   []NameValue `json:"localStorage"`
	SessionStorage []NameValue `json:"sessionStorage,omitempty"`
}

// NameValue is one storage item.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// LoggedOut says how a page shows that its login is gone. Any one that matches fails the job
// with CodeLoggedOut (checked after the navigation and again before the page is inspected).
type LoggedOut struct {
	URLPrefix string // the document's URL starts with it (the site redirected to its login page)
	Selector  string // an element matching it is in the document (a login form)
	Statuses  []int  // the document answered one of these (401, 403)
}

// CodeLoggedOut: Request.LoggedOut matched. Not retryable here: the caller decides (a new
// login and one more try).
const CodeLoggedOut = "logged_out"

// seedState puts st into the tab's browser context before the navigation: the cookies into the
// context, the storage items into every new document of their origin (an item the page has
// already set is left alone). It returns the script's identifier, which the job removes when
// it ends; the clean slate clears the cookies and the touched origins' storage.
func (t *tab) seedState(p *rod.Page, st *StorageState, res *Result) (proto.PageScriptIdentifier, error) {
	if st == nil {
		return "", nil
	}
	start := time.Now()
	if len(st.Cookies) > 0 {
		cookies := make([]*proto.NetworkCookieParam, 0, len(st.Cookies))
		for _, c := range st.Cookies {
			cp := &proto.NetworkCookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
				Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: proto.NetworkCookieSameSite(c.SameSite)}
			if cp.Path == "" {
				cp.Path = "/"
			}
			if c.Expires > 0 {
				cp.Expires = proto.TimeSinceEpoch(c.Expires)
			}
			cookies = append(cookies, cp)
		}
		err := proto.StorageSetCookies{Cookies: cookies, BrowserContextID: t.contextID}.Call(t.inst.rb.Context(p.GetContext()))
		if err != nil {
			logStep(res, "auth.cookies", fmt.Sprintf("%d cookies", len(cookies)), start, err, "")
			return "", fmt.Errorf("auth.cookies: %w", err)
		}
	}
	items := map[string]map[string][]NameValue{}
	for _, o := range st.Origins {
		if len(o.LocalStorage)+len(o.SessionStorage) > 0 {
			items[strings.TrimRight(o.Origin, "/")] = map[string][]NameValue{"local": o.LocalStorage, "session": o.SessionStorage}
		}
	}
	var id proto.PageScriptIdentifier
	if len(items) > 0 {
		data, err := json.Marshal(items)
		if err != nil {
			return "", err
		}
		r, err := proto.PageAddScriptToEvaluateOnNewDocument{Source: fmt.Sprintf(seedJS, data)}.Call(p)
		if err != nil {
			logStep(res, "auth.storage", fmt.Sprintf("%d origins", len(items)), start, err, "")
			return "", fmt.Errorf("auth.storage: %w", err)
		}
		id = r.Identifier
	}
	logStep(res, "auth.seed", fmt.Sprintf("%d cookies, %d origins", len(st.Cookies), len(items)), start, nil, "")
	return id, nil
}

// seedJS sets the storage items of the document's origin that are not set yet.
const seedJS = `(() => { try {
  const o = (%s)[location.origin]; if (!o) return;
  for (const [kind, store] of [["local", localStorage], ["session", sessionStorage]])
    for (const it of (o[kind] || [])) if (store.getItem(it.name) === null) store.setItem(it.name, it.value);
} catch (e) {} })()`

// saveState reads the context's cookies and the current document's local and session storage
// into res.State (Request.SaveState: a login recipe's product).
func (j *job) saveState() *Error {
	start := time.Now()
	cookies, err := proto.StorageGetCookies{BrowserContextID: j.t.contextID}.Call(j.t.inst.rb.Context(j.ctx))
	if err != nil {
		return j.fail(phaseCapture, fmt.Errorf("read cookies: %w", err))
	}
	st := &StorageState{Cookies: []StateCookie{}, Origins: []OriginState{}}
	for _, c := range cookies.Cookies {
		exp := float64(c.Expires)
		if c.Session {
			exp = -1
		}
		st.Cookies = append(st.Cookies, StateCookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Expires: exp, HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite)})
	}
	var o struct {
		Origin  string     `json:"origin"`
		Local   [][]string `json:"local"`
		Session [][]string `json:"session"`
	}
	if err := evalJSON(j.p, readStorageJS, &o); err != nil {
		return j.fail(phaseCapture, fmt.Errorf("read storage: %w", err))
	}
	if o.Origin != "" && o.Origin != "null" {
		st.Origins = append(st.Origins, OriginState{Origin: o.Origin, LocalStorage: pairs(o.Local), SessionStorage: pairs(o.Session)})
	}
	j.res.State = st
	logStep(j.res, "auth.save", fmt.Sprintf("%d cookies, %d origins", len(st.Cookies), len(st.Origins)), start, nil, "")
	return nil
}

const readStorageJS = `(() => { const r = {origin: location.origin, local: [], session: []};
  try { for (let i = 0; i < localStorage.length; i++) { const k = localStorage.key(i); r.local.push([k, localStorage.getItem(k)]); } } catch (e) {}
  try { for (let i = 0; i < sessionStorage.length; i++) { const k = sessionStorage.key(i); r.session.push([k, sessionStorage.getItem(k)]); } } catch (e) {}
  return r; })()`

func pairs(kv [][]string) []NameValue {
	out := make([]NameValue, 0, len(kv))
	for _, p := range kv {
		if len(p) == 2 {
			out = append(out, NameValue{Name: p[0], Value: p[1]})
		}
	}
	return out
}

// loggedOut fails the job with CodeLoggedOut when Request.LoggedOut matches the document.
func (j *job) loggedOut() *Error {
	lo := j.req.LoggedOut
	if lo == nil {
		return nil
	}
	st, _ := j.t.state()
	u := st.docURL
	if st.frameURL != "" {
		u = st.frameURL
	}
	if lo.URLPrefix != "" && strings.HasPrefix(u, lo.URLPrefix) {
		// The login page's query string may hold what a form submitted there: never quoted.
		return newError(CodeLoggedOut, false, nil, "the page is logged out: it went to %s", excerpt(redact.URL(u), 200))
	}
	for _, s := range lo.Statuses {
		if st.status == s {
			return newError(CodeLoggedOut, false, nil, "the page is logged out: it answered HTTP %d", s)
		}
	}
	if lo.Selector != "" {
		var found bool
		expr := fmt.Sprintf(`(() => { try { return !!document.querySelector(%s) } catch (e) { return false } })()`, jsString(lo.Selector))
		if err := evalJSON(j.p, expr, &found); err == nil && found {
			return newError(CodeLoggedOut, false, nil, "the page is logged out: it shows %s", excerpt(lo.Selector, 200))
		}
	}
	return nil
}
