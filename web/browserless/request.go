package browserless

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/snapq/snapq/jobs"
)

// The routes snapq answers, as Browserless names them.
const (
	RouteContent    = "content"
	RouteScreenshot = "screenshot"
	RoutePDF        = "pdf"
)

// Routes lists the routes in documentation order.
func Routes() []string { return []string{RouteContent, RouteScreenshot, RoutePDF} }

// Request is a Browserless body mapped onto snapq.
type Request struct {
	Target jobs.TargetInput
	// Token is the v1 body field token ("" when absent): the API key.
	Token string
	// Output is the snapq output whose bytes answer the route (html,
	// screenshot, pdf); Format the screenshot format (png, jpeg, webp).
	Output, Format string
	// Origin maps a snapq field the request set ("options.wait.selector")
	// to the Browserless field it came from ("waitForSelector.selector"), so
	// snapq's validation errors name the caller's fields (Rename).
	Origin map[string]string
}

// fieldFunc maps one top-level Browserless field.
type fieldFunc func(p *parser, field string, raw json.RawMessage)

// parser accumulates one request and its errors.
type parser struct {
	route string
	req   *Request
	o     *jobs.OptionsInput
	errs  jobs.FieldErrors
}

// Parse maps body, sent to route, onto a snapq target. Errors are
// *jobs.ValidationError naming the Browserless fields: unknown_field for a
// field Browserless's schema does not have either, refused_field for one
// snapq does not do, invalid_field for a value of the wrong shape,
// unsupported_value for a value snapq cannot honour.
func Parse(route string, body []byte) (*Request, error) {
	p := &parser{route: route, o: &jobs.OptionsInput{}, req: &Request{Origin: map[string]string{}}}
	var top map[string]json.RawMessage
	if err := strictUnmarshal(body, &top); err != nil || top == nil {
		p.errs.Add("invalid_json", "", "the body must be one JSON object")
		return nil, jobs.ValidationErrors(p.errs)
	}
	p.defaults()
	for _, k := range sortedKeys(top) {
		p.field(k, top[k])
	}
	if p.req.Target.URL == "" && !p.has("url") {
		p.errs.Add("required", "url", "url is required: snapq captures URLs (html is not supported)")
	}
	if err := jobs.ValidationErrors(p.errs); err != nil {
		return nil, err
	}
	p.req.Target.Options = p.o
	return p.req, nil
}

// defaults are what Browserless does when a field is absent: it blocks
// nothing, and screenshots are of the viewport, as PNG.
func (p *parser) defaults() {
	p.o.Block = &jobs.BlockInput{ResourceTypes: &[]string{}}
	switch p.route {
	case RouteContent:
		p.req.Output = "html"
	case RoutePDF:
		p.req.Output = "pdf"
	case RouteScreenshot:
		p.req.Output, p.req.Format = "screenshot", "png"
		p.screenshot().Mode = ptr("viewport")
	}
}

func (p *parser) has(field string) bool {
	for _, e := range p.errs {
		if e.Field == field {
			return true
		}
	}
	return false
}

// field maps one top-level field: known, refused or unknown.
func (p *parser) field(k string, raw json.RawMessage) {
	if reason, ok := refused[k]; ok {
		p.errs.Add("refused_field", k, reason)
		return
	}
	if f, ok := common[k]; ok {
		f(p, k, raw)
		return
	}
	if f, ok := perRoute[p.route][k]; ok {
		f(p, k, raw)
		return
	}
	p.errs.Add("unknown_field", k, fmt.Sprintf("Browserless's /%s has no field %q (see docs/agents.md for the fields snapq maps)", p.route, k))
}

// refused are fields of Browserless's schemas snapq does not do, and why.
var refused = map[string]string{
	"html":                "snapq captures URLs only: send url (html is not supported)",
	"addScriptTag":        "snapq does not run caller scripts from this endpoint: use POST /v1/capture with options.prepare.script",
	"waitForFunction":     "snapq does not run caller functions from this endpoint: use waitForSelector, or POST /v1/capture",
	"requestInterceptors": "snapq does not answer page requests with caller content",
	"authenticate":        "HTTP credentials are not taken in a request body: use an auth profile (options.auth_profile on POST /v1/capture)",
}

// common are the fields of every route.
var common = map[string]fieldFunc{
	"url":                  (*parser).url,
	"token":                (*parser).token,
	"gotoOptions":          (*parser).gotoOptions,
	"waitUntil":            (*parser).waitUntil,
	"gotoTimeout":          (*parser).gotoTimeout,
	"waitForSelector":      (*parser).waitForSelector,
	"waitForTimeout":       (*parser).waitForTimeout,
	"waitForEvent":         (*parser).waitForEvent,
	"bestAttempt":          (*parser).bestAttempt,
	"rejectResourceTypes":  (*parser).rejectResourceTypes,
	"rejectRequestPattern": (*parser).rejectRequestPattern,
	"setExtraHTTPHeaders":  (*parser).headers,
	"cookies":              (*parser).cookies,
	"userAgent":            (*parser).userAgent,
	"emulateMediaType":     (*parser).emulateMediaType,
	"viewport":             (*parser).viewport,
	"addStyleTag":          (*parser).addStyleTag,
	"setJavaScriptEnabled": (*parser).javaScript,
}

// perRoute are the fields of one route only.
var perRoute = map[string]map[string]fieldFunc{
	RouteScreenshot: {"options": (*parser).screenshotOptions, "selector": (*parser).selector, "scrollPage": (*parser).scrollPage},
	RoutePDF:        {"options": (*parser).pdfOptions},
}

// Rename rewrites the fields of a snapq validation error to the Browserless
// fields they came from; other errors are returned as they are.
func (r *Request) Rename(err error) error {
	ve, ok := err.(*jobs.ValidationError)
	if !ok {
		return err
	}
	out := make([]jobs.FieldError, len(ve.Fields))
	for i, f := range ve.Fields {
		f.Field = r.origin(f.Field)
		out[i] = f
	}
	return &jobs.ValidationError{Fields: out}
}

// origin is the Browserless name of a snapq field: the longest recorded
// prefix replaced.
func (r *Request) origin(field string) string {
	best := ""
	for k := range r.Origin {
		if (field == k || strings.HasPrefix(field, k+".") || strings.HasPrefix(field, k+"[")) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return field
	}
	return r.Origin[best] + field[len(best):]
}

// strictUnmarshal decodes one JSON value with numbers kept exact.
func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }
