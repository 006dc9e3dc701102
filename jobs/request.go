package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// CodeTooManyTargets is the field error of an oversized batch (HTTP 413).
const CodeTooManyTargets = "too_many_targets"

// Batch request limits.
const (
	MaxTargets     = 1000 // default; the api's SNAPQ_MAX_TARGETS
	MaxURLLength   = 2048
	MaxNameLength  = 200
	MaxLabels      = 50
	MaxLabelKey    = 64
	MaxLabelValue  = 256
	maxFieldErrors = 100 // a 1,000-target batch of junk names the first 100
)

// BatchRequest is the body of POST /v1/batches.
type BatchRequest struct {
	Targets []TargetInput     `json:"targets"`
	URLs    []string          `json:"urls"`
	Options *OptionsInput     `json:"options"`
	Labels  map[string]string `json:"labels"`
	Webhook *WebhookInput     `json:"webhook"`
}

// TargetInput is one page to capture.
type TargetInput struct {
	URL     string        `json:"url"`
	Name    string        `json:"name"`
	Options *OptionsInput `json:"options"`
}

// NewJob is a validated target ready to be stored.
type NewJob struct {
	URL     string
	Name    string
	Options Options
}

// schema lists the accepted keys of a JSON object; a nil value is a leaf.
type schema map[string]schema

var optionsSchema = schema{
	"viewport":   {"width": nil, "height": nil, "device_scale_factor": nil},
	"screenshot": {"mode": nil, "format": nil, "quality": nil, "max_segments": nil, "selector": nil},
	"wait": {"until": nil, "selector": nil, "selector_timeout_ms": nil, "delay_ms": nil, "best_attempt": nil,
		"fonts": nil, "images": nil, "hidden_selector": nil, "network_idle_ms": nil},
	"timeout_ms": nil,
	"outputs":    nil,
	"pdf":        {"paper": nil, "landscape": nil, "margin_mm": nil, "print_background": nil, "scale": nil, "page_ranges": nil},

	"markdown_max_chars": nil,
	"block":              {"resource_types": nil, "url_patterns": nil},

	"emulate": {"user_agent": nil, "headers": nil, "cookies": nil, "locale": nil, "timezone": nil,
		"color_scheme": nil, "reduced_motion": nil, "media": nil, "device": nil, "mobile": nil, "touch": nil},
	"prepare": {"hide_selectors": nil, "remove_selectors": nil, "css": nil, "script": nil,
		"script_required": nil, "disable_animations": nil},
	"scroll": {"enabled": nil, "step_px": nil, "delay_ms": nil, "max_ms": nil},

	"actions":            nil, // entries are checked by validator.actions
	"actions_timeout_ms": nil,
}

var targetSchema = schema{"url": nil, "name": nil, "options": optionsSchema}

// ParseBatchRequest decodes and validates a batch body. Any problem rejects
// the whole request with a *ValidationError naming every bad field.
func ParseBatchRequest(body []byte, maxTargets int) ([]NewJob, *BatchRequest, error) {
	if maxTargets <= 0 {
		maxTargets = MaxTargets
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, nil, invalidJSON(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, &ValidationError{Fields: []FieldError{{Code: "invalid_json", Field: "",
			Message: "request body must hold exactly one JSON object"}}}
	}
	root, ok := generic.(map[string]any)
	if !ok {
		return nil, nil, &ValidationError{Fields: []FieldError{{Code: "invalid_json", Field: "",
			Message: "request body must be a JSON object"}}}
	}
	var errs []FieldError
	checkKeys(root, schema{"targets": nil, "urls": nil, "options": optionsSchema, "labels": nil, "webhook": webhookSchema}, "", &errs)
	if ts, ok := root["targets"].([]any); ok {
		for i, t := range ts {
			if m, ok := t.(map[string]any); ok {
				checkKeys(m, targetSchema, fmt.Sprintf("targets[%d]", i), &errs)
			}
		}
	}
	before := len(errs)
	req := decodeBatch(body, &errs)
	if len(errs) > before {
		return nil, nil, &ValidationError{Fields: errs}
	}
	jobs := req.validate(&errs, maxTargets)
	if len(errs) > 0 {
		if len(errs) > maxFieldErrors {
			errs = errs[:maxFieldErrors]
		}
		return nil, nil, &ValidationError{Fields: errs}
	}
	return jobs, req, nil
}

func (r *BatchRequest) validate(errs *[]FieldError, maxTargets int) []NewJob {
	targets := make([]TargetInput, 0, len(r.Targets)+len(r.URLs))
	prefixes := make([]string, 0, cap(targets))
	for i, t := range r.Targets {
		targets = append(targets, t)
		prefixes = append(prefixes, fmt.Sprintf("targets[%d]", i))
	}
	for i, u := range r.URLs {
		targets = append(targets, TargetInput{URL: u})
		prefixes = append(prefixes, fmt.Sprintf("urls[%d]", i))
	}
	switch {
	case len(targets) == 0:
		*errs = append(*errs, FieldError{Code: "required", Field: "targets",
			Message: "give at least one target (targets[].url or urls[])"})
	case len(targets) > maxTargets:
		*errs = append(*errs, FieldError{Code: CodeTooManyTargets, Field: "targets",
			Message: fmt.Sprintf("a batch holds at most %d targets, got %d", maxTargets, len(targets))})
		return nil
	}
	validateLabels(r.Labels, errs)
	validateWebhook(r.Webhook, errs)
	// Batch options are validated once on their own, so their errors are not
	// repeated for every target.
	_, batchErrs := ResolveOptions(r.Options, "options", nil, "")
	*errs = append(*errs, batchErrs...)

	out := make([]NewJob, 0, len(targets))
	for i, t := range targets {
		p := prefixes[i]
		urlField := p + ".url"
		if strings.HasPrefix(p, "urls[") {
			urlField = p
		}
		u, err := NormalizeURL(t.URL)
		if err != nil {
			*errs = append(*errs, FieldError{Code: "invalid_url", Field: urlField, Message: err.Error()})
		}
		if len(t.Name) > MaxNameLength {
			*errs = append(*errs, FieldError{Code: "invalid_name", Field: p + ".name",
				Message: fmt.Sprintf("must be at most %d characters", MaxNameLength)})
		}
		var opts Options
		if len(batchErrs) == 0 {
			var targetErrs []FieldError
			opts, targetErrs = ResolveOptions(r.Options, "options", t.Options, p+".options")
			*errs = append(*errs, targetErrs...)
		}
		if len(*errs) > 0 {
			continue
		}
		name := SanitizeName(t.Name)
		if name == "" {
			name = NameFromURL(u)
		}
		out = append(out, NewJob{URL: u, Name: name, Options: opts})
	}
	return out
}

// decodeBatch decodes piece by piece so a type error can name its field,
// array index included (encoding/json's own path drops indices).
func decodeBatch(body []byte, errs *[]FieldError) *BatchRequest {
	var raw struct {
		Targets []json.RawMessage `json:"targets"`
		URLs    []json.RawMessage `json:"urls"`
		Options json.RawMessage   `json:"options"`
		Labels  json.RawMessage   `json:"labels"`
		Webhook json.RawMessage   `json:"webhook"`
	}
	var req BatchRequest
	if !decodeField(body, &raw, "", errs) {
		return &req
	}
	for i, t := range raw.Targets {
		var ti TargetInput
		if decodeField(t, &ti, fmt.Sprintf("targets[%d]", i), errs) {
			req.Targets = append(req.Targets, ti)
		}
	}
	for i, u := range raw.URLs {
		var s string
		if decodeField(u, &s, fmt.Sprintf("urls[%d]", i), errs) {
			req.URLs = append(req.URLs, s)
		}
	}
	if len(raw.Options) > 0 {
		decodeField(raw.Options, &req.Options, "options", errs)
	}
	if len(raw.Labels) > 0 {
		decodeField(raw.Labels, &req.Labels, "labels", errs)
	}
	if len(raw.Webhook) > 0 {
		decodeField(raw.Webhook, &req.Webhook, "webhook", errs)
	}
	return &req
}

func decodeField(raw []byte, dst any, prefix string, errs *[]FieldError) bool {
	err := json.Unmarshal(raw, dst)
	if err == nil {
		return true
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		*errs = append(*errs, FieldError{Code: "invalid_json", Field: prefix, Message: err.Error()})
		return false
	}
	field := prefix
	if te.Field != "" {
		if field != "" {
			field += "."
		}
		field += jsonPath(te.Field)
	}
	*errs = append(*errs, FieldError{Code: "invalid_type", Field: field,
		Message: "must be " + describeType(te.Type.String()) + ", not " + te.Value})
	return false
}

func validateLabels(labels map[string]string, errs *[]FieldError) {
	if len(labels) > MaxLabels {
		*errs = append(*errs, FieldError{Code: "invalid_labels", Field: "labels",
			Message: fmt.Sprintf("at most %d labels", MaxLabels)})
		return
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || len(k) > MaxLabelKey || len(labels[k]) > MaxLabelValue {
			*errs = append(*errs, FieldError{Code: "invalid_labels", Field: "labels." + k,
				Message: fmt.Sprintf("keys must be 1-%d characters and values at most %d", MaxLabelKey, MaxLabelValue)})
		}
	}
}

// checkKeys reports keys the schema does not know, with their full path.
func checkKeys(obj map[string]any, s schema, path string, errs *[]FieldError) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field := k
		if path != "" {
			field = path + "." + k
		}
		sub, known := s[k]
		if !known {
			*errs = append(*errs, FieldError{Code: "unknown_field", Field: field,
				Message: fmt.Sprintf("unknown field %q", k)})
			continue
		}
		if sub != nil {
			if m, ok := obj[k].(map[string]any); ok {
				checkKeys(m, sub, field, errs)
			}
		}
	}
}

func invalidJSON(err error) error {
	var se *json.SyntaxError
	msg := "request body is not valid JSON"
	if errors.As(err, &se) {
		msg = fmt.Sprintf("request body is not valid JSON (at byte %d: %v)", se.Offset, se)
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "request body is empty or truncated JSON"
	}
	return &ValidationError{Fields: []FieldError{{Code: "invalid_json", Field: "", Message: msg}}}
}

// jsonPath turns encoding/json's "targets.0.options.viewport.width" into
// "targets[0].options.viewport.width".
func jsonPath(p string) string {
	parts := strings.Split(p, ".")
	var b strings.Builder
	for i, s := range parts {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			b.WriteString("[" + s + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func describeType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map[") || strings.Contains(goType, "Input"):
		return "an object"
	case strings.Contains(goType, "float") || strings.Contains(goType, "int"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "true or false"
	default:
		return "a string"
	}
}
