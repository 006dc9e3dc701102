package jobs_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
)

// The field errors a client gets back for a bad POST /v1/batches body.
func TestParseBatchRequestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []jobs.FieldError
	}{
		{name: "unknown key deep in an array", body: `{"targets": [{"url": "https://a.example/"},
			{"url": "https://b.example/", "options": {"viewport": {"widht": 800}}}]}`,
			want: []jobs.FieldError{{Code: "unknown_field", Field: "targets[1].options.viewport.widht", Message: `unknown field "widht"`}}},
		{name: "unknown keys at every depth, sorted", body: `{"urls": ["https://a.example/"], "zzz": 1, "options": {"colour": "red", "wait": {"untill": "load"}}}`,
			want: []jobs.FieldError{
				{Code: "unknown_field", Field: "options.colour", Message: `unknown field "colour"`},
				{Code: "unknown_field", Field: "options.wait.untill", Message: `unknown field "untill"`},
				{Code: "unknown_field", Field: "zzz", Message: `unknown field "zzz"`},
			}},
		{name: "unknown key does not hide validation", body: `{"target": [{"url": "https://a.example/"}]}`,
			want: []jobs.FieldError{
				{Code: "unknown_field", Field: "target", Message: `unknown field "target"`},
				{Code: "required", Field: "targets", Message: "give at least one target (targets[].url or urls[])"},
			}},
		{name: "string for a number", body: `{"targets": [{"url": "https://a.example/", "options": {"viewport": {"width": "wide"}}}]}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "targets[0].options.viewport.width", Message: "must be a number, not string"}}},
		{name: "object for an array", body: `{"urls": {"a": "https://a.example/"}}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "urls", Message: "must be an array, not object"}}},
		{name: "number in a string array", body: `{"urls": ["https://a.example/", 7]}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "urls[1]", Message: "must be a string, not number"}}},
		{name: "string for a bool", body: `{"urls": ["https://a.example/"], "options": {"wait": {"best_attempt": "yes"}}}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "options.wait.best_attempt", Message: "must be true or false, not string"}}},
		{name: "array for an object", body: `{"urls": ["https://a.example/"], "labels": ["team"]}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "labels", Message: "must be an object, not array"}}},
		{name: "number as a map value", body: `{"urls": ["https://a.example/"], "labels": {"team": 5}}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "labels.team", Message: "must be a string, not number"}}},
		{name: "map values named in key order", body: `{"urls": ["https://a.example/"], "labels": {"c": 1, "a": true, "d": [], "b": {}}}`,
			want: []jobs.FieldError{
				{Code: "invalid_type", Field: "labels.a", Message: "must be a string, not bool"},
				{Code: "invalid_type", Field: "labels.b", Message: "must be a string, not object"},
				{Code: "invalid_type", Field: "labels.c", Message: "must be a string, not number"},
				{Code: "invalid_type", Field: "labels.d", Message: "must be a string, not array"},
			}},
		{name: "type errors and unknown keys together", body: `{"urls": [true], "extra": null}`,
			want: []jobs.FieldError{
				{Code: "unknown_field", Field: "extra", Message: `unknown field "extra"`},
				{Code: "invalid_type", Field: "urls[0]", Message: "must be a string, not bool"},
			}},
		{name: "non-object body", body: `["https://a.example/"]`,
			want: []jobs.FieldError{{Code: "invalid_json", Message: "request body must be a JSON object"}}},
		{name: "string body", body: `"https://a.example/"`,
			want: []jobs.FieldError{{Code: "invalid_json", Message: "request body must be a JSON object"}}},
		{name: "trailing object", body: `{"urls": ["https://a.example/"]} {}`,
			want: []jobs.FieldError{{Code: "invalid_json", Message: "request body must hold exactly one JSON object"}}},
		{name: "trailing garbage", body: `{"urls": ["https://a.example/"]}]`,
			want: []jobs.FieldError{{Code: "invalid_json", Message: "request body must hold exactly one JSON object"}}},
		{name: "empty body", body: ``,
			want: []jobs.FieldError{{Code: "invalid_json", Message: "request body is empty or truncated JSON"}}},
		{name: "truncated", body: `{"urls": [`,
			want: []jobs.FieldError{{Code: "invalid_json", Message: "request body is empty or truncated JSON"}}},
		{name: "syntax error", body: `{"urls": [}`,
			want: []jobs.FieldError{{Code: "invalid_json", Message: "request body is not valid JSON (at byte 11: invalid character '}' looking for beginning of value)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := jobs.ParseBatchRequest([]byte(tt.body), 0)
			var ve *jobs.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ParseBatchRequest = %v, want a *ValidationError", err)
			}
			if diff := cmp.Diff(tt.want, ve.Fields); diff != "" {
				t.Errorf("field errors (-want +got):\n%s", diff)
			}
		})
	}
}

// decodeTarget exercises DecodeStrict's rules on types batch bodies do not
// have: whole numbers, a custom unmarshaler, a recursive type, a prefix.
type decodeTarget struct {
	Count   int             `json:"count"`
	Ratio   float64         `json:"ratio"`
	Sizes   []uint          `json:"sizes"`
	Raw     json.RawMessage `json:"raw"`
	Any     any             `json:"any"`
	Tree    *node           `json:"tree"`
	Skipped string          `json:"-"`
	embedded
}

type embedded struct {
	Inner string `json:"inner"`
}

type node struct {
	Child *node `json:"child"`
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"child": `, 40) + `null` + strings.Repeat(`}`, 40)
	tests := []struct {
		name   string
		body   string
		want   []jobs.FieldError
		wantOK bool
		check  func(t *testing.T, got decodeTarget)
	}{
		{name: "valid", body: `{"count": 3, "ratio": 0.5, "sizes": [1, 2], "raw": {"x": [1]}, "any": {"y": 1}, "inner": "e", "tree": {"child": {}}}`,
			wantOK: true, check: func(t *testing.T, got decodeTarget) {
				if got.Count != 3 || got.Ratio != 0.5 || len(got.Sizes) != 2 || got.Inner != "e" || got.Tree == nil || got.Tree.Child == nil {
					t.Errorf("decoded %+v", got)
				}
			}},
		{name: "fraction where a whole number is required", body: `{"count": 2.5}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "spec.count", Message: "must be a whole number, not 2.5"}}},
		{name: "exponent where a whole number is required", body: `{"sizes": [1, 1e3]}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "spec.sizes[1]", Message: "must be a whole number, not 1e3"}}},
		{name: "fraction is fine for a float", body: `{"ratio": 2.5}`, wantOK: true},
		{name: "null leaves a value", body: `{"count": null, "sizes": null, "tree": null}`, wantOK: true},
		{name: "a json tag of - is not a key", body: `{"-": "x", "Skipped": "y"}`, wantOK: true,
			want: []jobs.FieldError{
				{Code: "unknown_field", Field: "spec.-", Message: `unknown field "-"`},
				{Code: "unknown_field", Field: "spec.Skipped", Message: `unknown field "Skipped"`},
			}},
		{name: "embedded struct's keys are flat", body: `{"embedded": {}}`, wantOK: true,
			want: []jobs.FieldError{{Code: "unknown_field", Field: "spec.embedded", Message: `unknown field "embedded"`}}},
		{name: "unknown key in a recursive type", body: `{"tree": {"child": {"chlid": {}}}}`, wantOK: true,
			want: []jobs.FieldError{{Code: "unknown_field", Field: "spec.tree.child.chlid", Message: `unknown field "chlid"`}}},
		{name: "too deep", body: `{"tree": ` + deep + `}`,
			want: []jobs.FieldError{{Code: "invalid_type", Field: "spec.tree" + strings.Repeat(".child", 32), Message: "nested too deeply"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got decodeTarget
			var errs jobs.FieldErrors
			ok := jobs.DecodeStrict([]byte(tt.body), &got, "spec", &errs)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, []jobs.FieldError(errs)); diff != "" {
				t.Errorf("field errors (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}
