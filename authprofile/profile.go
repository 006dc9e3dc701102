package authprofile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/internal/redact"
	"github.com/snapq/snapq/jobs"
)

// Limits of a profile, documented in docs/api/auth-profiles.md and web/openapi.json.
const (
	MaxOrigins       = 20
	MaxSecrets       = 20
	MaxSecretBytes   = 4096
	MaxStateCookies  = 200
	MaxStateBytes    = 512 << 10
	MaxRefreshEveryS = 7 * 24 * 3600
)

// Sources of a stored login.
const (
	SourceRecipe = "recipe"
	SourceUpload = "upload"
)

// ErrNameTaken: the API key already has a profile of that name.
var ErrNameTaken = errors.New("an auth profile of this name already exists")

// Profile is a named, owned login. The secrets' values are only ever in
// SealedSecrets; views list their names.
type Profile struct {
	ID      string
	Owner   string // API key id, "" without auth
	Name    string
	Origins []string // "http://127.0.0.1:8080": where its login may be used and run
	Spec    Spec
	// SecretNames are the names of the sealed secrets, sorted.
	SecretNames   []string
	SealedSecrets []byte // nil: none
	// Version is the current login's version (0: none yet).
	Version       int
	LastLoginAt   *time.Time
	LastFailureAt *time.Time
	LastFailure   string
	// LastLog is the action log of the last login the recipe ran (secrets masked).
	LastLog []capture.LogEntry
	// LastTestID is the last test (POST /test) a worker finished, with its
	// failure ("" when it logged in).
	LastTestID    string
	LastTestError string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Spec is a profile's recipe and how its pages show they are logged out.
type Spec struct {
	LoginURL string `json:"login_url,omitempty"`
	// Steps are actions as a job takes them; a type step may give
	// {"secret": "name"} instead of text. Stored as given (no secret values).
	Steps         []json.RawMessage `json:"steps,omitempty"`
	Success       Success           `json:"success"`
	LoggedOut     LoggedOut         `json:"logged_out"`
	RefreshEveryS int               `json:"refresh_every_s,omitempty"`
}

// Success says that a recipe logged in: the selector is visible at the end,
// and/or the final URL starts with the prefix.
type Success struct {
	Selector  string `json:"selector,omitempty"`
	URLPrefix string `json:"url_prefix,omitempty"`
}

// LoggedOut says how the site shows a page without a login.
type LoggedOut struct {
	URLPrefix string `json:"url_prefix,omitempty"`
	Selector  string `json:"selector,omitempty"`
	Statuses  []int  `json:"statuses,omitempty"`
}

// HasRecipe reports whether the profile can log in by itself.
func (p *Profile) HasRecipe() bool { return p.Spec.LoginURL != "" }

func (l LoggedOut) capture() *capture.LoggedOut {
	if l.URLPrefix == "" && l.Selector == "" && len(l.Statuses) == 0 {
		return nil
	}
	return &capture.LoggedOut{URLPrefix: l.URLPrefix, Selector: l.Selector, Statuses: l.Statuses}
}

// Repository stores profiles and their logins. store.Store implements it.
type Repository interface {
	// CreateAuthProfile stores p and, when state is not nil, its first login
	// (version 1, SourceUpload); ErrNameTaken when the name is taken.
	CreateAuthProfile(ctx context.Context, p *Profile, state []byte) error
	GetAuthProfile(ctx context.Context, id string) (*Profile, error)
	// AuthProfileOfBatch is the profile named name of the batch's owner.
	AuthProfileOfBatch(ctx context.Context, batchID, name string) (*Profile, error)
	ListAuthProfiles(ctx context.Context, owner string) ([]*Profile, error)
	// UpdateAuthProfile writes name, origins, spec and secrets; ErrNameTaken.
	UpdateAuthProfile(ctx context.Context, p *Profile) error
	DeleteAuthProfile(ctx context.Context, id string) error
	// AddAuthState stores a login as version after+1, only if the current
	// version is after; added is false when another login got there first.
	AddAuthState(ctx context.Context, id string, after int, sealed []byte, source string, log []capture.LogEntry) (version int, added bool, err error)
	// AuthState is the current login (version 0, nil: none).
	AuthState(ctx context.Context, id string) (version int, sealed []byte, created time.Time, err error)
	// RecordAuthFailure notes a failed login.
	RecordAuthFailure(ctx context.Context, id, message string, log []capture.LogEntry) error
	// RecordAuthTest notes that test testID finished with failure ("" when
	// it logged in) and its log.
	RecordAuthTest(ctx context.Context, id, testID, failure string, log []capture.LogEntry) error
}

// Input is the wire form of a profile (POST and PATCH /v1/auth-profiles).
type Input struct {
	Name          *string             `json:"name,omitempty"`
	Origins       *[]string           `json:"origins,omitempty"`
	LoginURL      *string             `json:"login_url,omitempty"`
	Steps         *[]json.RawMessage  `json:"steps,omitempty"`
	Success       *Success            `json:"success,omitempty"`
	LoggedOut     *LoggedOut          `json:"logged_out,omitempty"`
	RefreshEveryS *float64            `json:"refresh_every_s,omitempty"`
	Secrets       *map[string]*string `json:"secrets,omitempty"`
	StorageState  *json.RawMessage    `json:"storage_state,omitempty"`
}

// apply validates in over p (a new profile or a copy of the stored one),
// recording its problems in errs. secrets gets the secrets after the change;
// state the uploaded storage state, if any.
func (in *Input) apply(p *Profile, secrets map[string]string, creating bool, errs *jobs.FieldErrors) *capture.StorageState {
	if in.Name != nil {
		if !jobs.ValidProfileName(*in.Name) {
			errs.Add("invalid_field", "name", "must be 1-64 of a-z, 0-9, '-', '_', starting with a letter or digit")
		}
		p.Name = *in.Name
	} else if creating {
		errs.Add("required", "name", "is required")
	}
	if in.Origins != nil {
		p.Origins = applyOrigins(*in.Origins, errs)
	} else if creating {
		errs.Add("required", "origins", "is required")
	}
	in.applyRecipe(p, errs)
	if in.Secrets != nil {
		applySecrets(*in.Secrets, secrets, errs)
	}
	p.SecretNames = []string{}
	for name := range secrets {
		p.SecretNames = append(p.SecretNames, name)
	}
	sort.Strings(p.SecretNames)
	checkSpec(p, secrets, errs)
	var st *capture.StorageState
	if in.StorageState != nil {
		st = parseStorageState(*in.StorageState, p.Origins, errs)
	}
	if creating && !p.HasRecipe() && st == nil {
		errs.Add("required", "login_url", "a profile needs a recipe (login_url, steps, success) or a storage_state")
	}
	return st
}

// applyOrigins is the given origins normalized, without repeats.
func applyOrigins(given []string, errs *jobs.FieldErrors) []string {
	var origins []string
	if len(given) == 0 || len(given) > MaxOrigins {
		errs.Add("invalid_field", "origins", fmt.Sprintf("must list 1 to %d origins", MaxOrigins))
	}
	for i, o := range given {
		norm, ok := normalizeOrigin(o)
		if !ok {
			errs.Add("invalid_field", fmt.Sprintf("origins[%d]", i), `must be an origin: "https://host" or "http://host:port", no path`)
			continue
		}
		if !slices.Contains(origins, norm) {
			origins = append(origins, norm)
		}
	}
	return origins
}

// applyRecipe copies the given recipe fields onto p's spec (checkSpec validates them).
func (in *Input) applyRecipe(p *Profile, errs *jobs.FieldErrors) {
	if in.LoginURL != nil {
		p.Spec.LoginURL = *in.LoginURL
	}
	if in.Steps != nil {
		p.Spec.Steps = *in.Steps
	}
	if in.Success != nil {
		p.Spec.Success = *in.Success
	}
	if in.LoggedOut != nil {
		p.Spec.LoggedOut = *in.LoggedOut
	}
	if in.RefreshEveryS != nil {
		if *in.RefreshEveryS < 0 || *in.RefreshEveryS > MaxRefreshEveryS {
			errs.Add("invalid_field", "refresh_every_s", fmt.Sprintf("must be 0 (never) to %d seconds", MaxRefreshEveryS))
		} else {
			p.Spec.RefreshEveryS = int(*in.RefreshEveryS)
		}
	}
}

// applySecrets sets or (null or "") removes each given secret in secrets.
func applySecrets(given map[string]*string, secrets map[string]string, errs *jobs.FieldErrors) {
	for name, v := range given {
		f := "secrets." + name
		switch {
		case !jobs.ValidProfileName(name):
			errs.Add("invalid_field", f, "a secret's name is 1-64 of a-z, 0-9, '-', '_'")
		case v == nil || *v == "":
			delete(secrets, name) // null or "": removed
		case len(*v) > MaxSecretBytes:
			errs.Add("invalid_field", f, fmt.Sprintf("at most %d bytes", MaxSecretBytes))
		default:
			secrets[name] = *v
		}
	}
	if len(secrets) > MaxSecrets {
		errs.Add("invalid_field", "secrets", fmt.Sprintf("at most %d secrets", MaxSecrets))
	}
}

// checkSpec validates the recipe: its login URL on one of the origins, its
// steps valid actions whose secret references name secrets it has, a success
// condition, and the logged-out conditions; its problems go to errs.
func checkSpec(p *Profile, secrets map[string]string, errs *jobs.FieldErrors) {
	s := p.Spec
	if s.LoginURL != "" {
		if o, ok := originOf(s.LoginURL); !ok || !slices.Contains(p.Origins, o) {
			errs.Add("invalid_field", "login_url", "must be an http(s) URL on one of the profile's origins")
		}
		if s.Success.Selector == "" && s.Success.URLPrefix == "" {
			errs.Add("required", "success", "a recipe needs success.selector or success.url_prefix")
		}
		if len(s.Steps) == 0 {
			errs.Add("required", "steps", "a recipe needs steps")
		}
	} else if len(s.Steps) > 0 {
		errs.Add("required", "login_url", "steps need the login_url they start on")
	}
	if u := s.Success.URLPrefix; u != "" {
		if o, ok := originOf(u); !ok || !slices.Contains(p.Origins, o) {
			errs.Add("invalid_field", "success.url_prefix", "must be a URL on one of the profile's origins")
		}
	}
	for i, st := range s.LoggedOut.Statuses {
		if st < 400 || st > 599 {
			errs.Add("invalid_field", fmt.Sprintf("logged_out.statuses[%d]", i), "must be an HTTP error status (400-599)")
		}
	}
	recipeActions(s.Steps, secrets, p.Origins, false, errs)
}

// dataSteps are the action types a recipe may not hold: each returns page
// data (a value, an image) that a recipe could read a typed secret back with.
var dataSteps = map[string]bool{capture.ActionEvaluate: true, capture.ActionScreenshot: true}

// recipeActions turns the steps into the renderer's actions; with fill, a
// type step's secret reference gets the secret's value (marked Secret) and
// may be typed only into a document of one of origins. Its problems go to errs
// (and the actions are nil).
func recipeActions(steps []json.RawMessage, secrets map[string]string, origins []string, fill bool, errs *jobs.FieldErrors) []capture.Action {
	n := len(*errs)
	inputs := make([]jobs.ActionInput, len(steps))
	refs := map[int]string{}
	for i, raw := range steps {
		f := fmt.Sprintf("steps[%d]", i)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			errs.Add("invalid_field", f, "must be an action object")
			continue
		}
		if typ, _ := m["type"].(string); dataSteps[typ] {
			errs.Add("invalid_field", f+".type", fmt.Sprintf("a login recipe may not %s: its steps may not return page data", typ))
			continue
		}
		if ref, ok := m["secret"]; ok {
			name, _ := ref.(string)
			_, has := secrets[name]
			switch {
			case m["type"] != capture.ActionType:
				errs.Add("invalid_field", f+".secret", "only a type step takes a secret")
			case m["text"] != nil:
				errs.Add("invalid_field", f+".secret", "give text or secret, not both")
			case !has:
				errs.Add("invalid_field", f+".secret", fmt.Sprintf("names no secret of the profile (it has: %s); send it in secrets "+
					"(a PATCH that changes origins, login_url or steps keeps only the secrets it sends again)", strings.Join(sortedKeys(secrets), ", ")))
			}
			delete(m, "secret")
			m["text"] = capture.SecretMask
			refs[i] = name
		}
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &inputs[i]); err != nil {
			errs.Add("invalid_field", f, err.Error())
		}
	}
	if len(*errs) > n {
		return nil
	}
	as := jobs.ResolveActions(inputs, "steps", errs)
	if len(*errs) > n {
		return nil
	}
	for i, name := range refs {
		as[i].Secret = true
		if fill {
			as[i].Text, as[i].Origins = secrets[name], origins
		}
	}
	return as
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// normalizeOrigin returns "scheme://host[:port]" of an origin given alone.
func normalizeOrigin(s string) (string, bool) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" ||
		u.User != nil || u.Fragment != "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// originOf is the origin of an http(s) URL.
func originOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// parseStorageState reads a Playwright storageState document and keeps it to
// the profile's origins: every cookie's domain must be one of their hosts
// (or a parent domain of one), every origin one of them. Its problems go to errs.
func parseStorageState(raw []byte, origins []string, errs *jobs.FieldErrors) *capture.StorageState {
	if len(raw) > MaxStateBytes {
		errs.Add("invalid_field", "storage_state", fmt.Sprintf("at most %d bytes", MaxStateBytes))
		return nil
	}
	var st capture.StorageState
	if err := json.Unmarshal(raw, &st); err != nil {
		errs.Add("invalid_field", "storage_state", "must be a Playwright storageState object {cookies, origins}: "+err.Error())
		return nil
	}
	if len(st.Cookies) > MaxStateCookies {
		errs.Add("invalid_field", "storage_state.cookies", fmt.Sprintf("at most %d cookies", MaxStateCookies))
	}
	if len(st.Cookies) == 0 && len(st.Origins) == 0 {
		errs.Add("invalid_field", "storage_state", "has no cookies and no origins")
	}
	hosts := make([]string, 0, len(origins))
	for _, o := range origins {
		u, _ := url.Parse(o)
		hosts = append(hosts, u.Hostname())
	}
	for i, c := range st.Cookies {
		f := fmt.Sprintf("storage_state.cookies[%d]", i)
		d := strings.TrimPrefix(strings.ToLower(c.Domain), ".")
		if c.Name == "" || d == "" {
			errs.Add("invalid_field", f, "a cookie needs a name and a domain")
			continue
		}
		if !slices.ContainsFunc(hosts, func(h string) bool { return h == d || strings.HasSuffix(h, "."+d) }) {
			errs.Add("invalid_field", f+".domain", fmt.Sprintf("%q is not the host of one of the profile's origins", c.Domain))
		}
	}
	for i, o := range st.Origins {
		norm, ok := normalizeOrigin(o.Origin)
		if !ok || !slices.Contains(origins, norm) {
			errs.Add("invalid_field", fmt.Sprintf("storage_state.origins[%d].origin", i), "must be one of the profile's origins")
			continue
		}
		st.Origins[i].Origin = norm
	}
	if st.Cookies == nil {
		st.Cookies = []capture.StateCookie{}
	}
	if st.Origins == nil {
		st.Origins = []capture.OriginState{}
	}
	return &st
}

// Mask is the one masking function of everything a profile's login turns
// into text (failure messages, action logs, log lines, webhook payloads):
// every encoding of every secret of the profile is masked (redact.Masker),
// and the query strings and fragments of URLs are dropped.
func Mask(s string, secrets map[string]string) string { return newMasker(secrets)(s) }

// newMasker is Mask for one set of secrets, built once.
func newMasker(secrets map[string]string) func(string) string {
	values := make([]string, 0, len(secrets))
	for _, v := range secrets {
		values = append(values, v)
	}
	m := redact.New(values...)
	return func(s string) string { return redact.URLs(m.Mask(s)) }
}

// maskLog masks every text of a log.
func maskLog(log []capture.LogEntry, mask func(string) string) []capture.LogEntry {
	out := slices.Clone(log)
	for i := range out {
		out[i].Target = mask(out[i].Target)
		out[i].Error = mask(out[i].Error)
		out[i].Excerpt = mask(out[i].Excerpt)
	}
	return out
}
