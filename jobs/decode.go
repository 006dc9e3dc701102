package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Request bodies are decoded strictly, by one mechanism for every body
// (batches, suites, patches): the keys a body may hold are the json tags of
// the Go type it decodes into, at every depth, so adding an option is adding
// a field; nothing else lists keys. A type with its own UnmarshalJSON (an
// action) checks its own keys.

// maxDecodeDepth bounds how deep a body's values are walked; the types it
// decodes into are far shallower, so deeper bodies are refused, not walked.
const maxDecodeDepth = 32

// maxFieldErrors caps the errors of one request: a 1,000-target batch of junk
// names the first 100.
const maxFieldErrors = 100

// DecodeStrict decodes body, which must hold exactly one JSON object, into dst
// (a pointer to a struct). It records in errs every key dst's type does not
// declare and every value of the wrong JSON type, each named by its full path
// under prefix ("targets[2].options.viewport.width"). ok is false when dst
// could not be filled (bad JSON or a wrong type): the caller stops there.
// Unknown keys alone leave ok true, so validation can name the rest of the
// problems too.
func DecodeStrict(body []byte, dst any, prefix string, errs *FieldErrors) (ok bool) {
	root := decodeObject(body, errs)
	if root == nil {
		return false
	}
	w := walker{errs: errs}
	w.walk(root, reflect.TypeOf(dst), prefix, 0)
	if w.typeErrs {
		return false
	}
	if err := json.Unmarshal(body, dst); err != nil {
		errs.Add("invalid_json", prefix, err.Error())
		return false
	}
	return true
}

// ValidationErrors caps errs and wraps them; nil when there are none.
func ValidationErrors(errs []FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) > maxFieldErrors {
		errs = errs[:maxFieldErrors]
	}
	return &ValidationError{Fields: errs}
}

// DecodeObject decodes a body that must hold exactly one JSON object into
// its generic form (numbers as json.Number).
func DecodeObject(body []byte) (map[string]any, error) {
	var errs FieldErrors
	m := decodeObject(body, &errs)
	if m == nil {
		return nil, ValidationErrors(errs)
	}
	return m, nil
}

// decodeObject is body's one JSON object, or nil with its problem in errs.
func decodeObject(body []byte, errs *FieldErrors) map[string]any {
	var generic any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		errs.Add("invalid_json", "", invalidJSON(err))
		return nil
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		errs.Add("invalid_json", "", "request body must hold exactly one JSON object")
		return nil
	}
	root, ok := generic.(map[string]any)
	if !ok {
		errs.Add("invalid_json", "", "request body must be a JSON object")
		return nil
	}
	return root
}

// invalidJSON is the message of a body that does not parse.
func invalidJSON(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("request body is not valid JSON (at byte %d: %v)", se.Offset, se)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "request body is empty or truncated JSON"
	}
	return "request body is not valid JSON"
}

type walker struct {
	errs     *FieldErrors
	typeErrs bool
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// walk checks the generic value v against type t.
func (w *walker) walk(v any, t reflect.Type, path string, depth int) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return // null leaves a value as it is; a custom type checks itself
	}
	if depth > maxDecodeDepth {
		w.typeError(path, "nested too deeply")
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.object(v, t, path, depth)
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			w.mismatch(path, "an object", v)
			return
		}
		for _, k := range sortedKeys(obj) {
			w.walk(obj[k], t.Elem(), join(path, k), depth+1)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			w.mismatch(path, "an array", v)
			return
		}
		for i, e := range arr {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	default:
		w.scalar(v, t, path)
	}
}

// object checks a JSON object against struct type t: every key a known field, each value
// of its field's type.
func (w *walker) object(v any, t reflect.Type, path string, depth int) {
	obj, ok := v.(map[string]any)
	if !ok {
		w.mismatch(path, "an object", v)
		return
	}
	fields := fieldsOf(t)
	for _, k := range sortedKeys(obj) {
		ft, known := fields[k]
		if !known {
			w.errs.Add("unknown_field", join(path, k), fmt.Sprintf("unknown field %q", k))
			continue
		}
		w.walk(obj[k], ft, join(path, k), depth+1)
	}
}

// scalar checks a JSON string, boolean or number against type t.
func (w *walker) scalar(v any, t reflect.Type, path string) {
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			w.mismatch(path, "a string", v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			w.mismatch(path, "true or false", v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n, ok := v.(json.Number); !ok {
			w.mismatch(path, "a number", v)
		} else if _, err := n.Int64(); err != nil {
			w.typeError(path, "must be a whole number, not "+n.String())
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			w.mismatch(path, "a number", v)
		}
	}
}

func (w *walker) mismatch(path, want string, got any) {
	w.typeError(path, "must be "+want+", not "+jsonKind(got))
}

func (w *walker) typeError(path, msg string) {
	w.typeErrs = true
	w.errs.Add("invalid_type", path, msg)
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// fieldsOf maps the JSON keys of a struct type (its json tags, embedded
// structs flattened) to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" && tag == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, ft := range fieldsOf(f.Type) {
				m[k] = ft
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		m[name] = f.Type
	}
	fieldCache.Store(t, m)
	return m
}
