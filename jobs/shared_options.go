package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// A batch's jobs share most of their options: the batch's, resolved once. Storing the
// resolved options whole with every job made a 1,000-target batch with 200 KB of batch
// options (headers, cookies, scripts) hold 200 MB, read again by every listing. So the
// batch stores its shared options once and each job only how its own options differ from
// them: nothing for a target without options, the target's overrides otherwise.
//
// The difference is a JSON merge patch (RFC 7386) of the two options' JSON forms. It
// gives back exactly the options that were resolved at submission (ResolveOptions, a
// suite's per-viewport captures), whatever the merge semantics that produced them:
// objects are patched key by key, lists and values replaced, a key the job lacks is
// removed. Removing a key and storing null decode alike, into a fresh Options, as the
// field's zero value, which is what the job's own JSON held (null, or omitted as empty).

// OptionsOverride returns how o differs from shared as a merge patch, or nil when it does
// not differ. sharedJSON is shared encoded with json.Marshal (encode it once per batch).
func OptionsOverride(shared *Options, sharedJSON []byte, o *Options) (json.RawMessage, error) {
	if reflect.DeepEqual(shared, o) {
		return nil, nil // the common case: a target without options
	}
	base, err := decodeTree(sharedJSON)
	if err != nil {
		return nil, fmt.Errorf("shared options: %w", err)
	}
	own, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	target, err := decodeTree(own)
	if err != nil {
		return nil, err
	}
	patch := mergeDiff(base, target)
	if len(patch) == 0 {
		return nil, nil
	}
	return json.Marshal(patch)
}

// SharedOptions resolves the options of a batch's jobs from the batch's shared options
// and each job's override. One SharedOptions serves a whole listing: the shared JSON is
// decoded once, and jobs without an override share that one decoded value (their slices
// and maps included), so a listing holds one copy, not one per job. Options from it are
// read-only.
type SharedOptions struct {
	raw  []byte
	opts *Options       // decoded on first use
	tree map[string]any // decoded on first override
}

// NewSharedOptions wraps the stored JSON of a batch's shared options.
func NewSharedOptions(raw []byte) *SharedOptions { return &SharedOptions{raw: raw} }

// Resolve returns a job's options: the shared ones with override (a merge patch from
// OptionsOverride) applied; an empty override means none.
func (s *SharedOptions) Resolve(override []byte) (Options, error) {
	if len(bytes.TrimSpace(override)) == 0 || bytes.Equal(bytes.TrimSpace(override), []byte("null")) {
		if s.opts == nil {
			var o Options
			if err := json.Unmarshal(s.raw, &o); err != nil {
				return Options{}, fmt.Errorf("shared options: %w", err)
			}
			s.opts = &o
		}
		return *s.opts, nil
	}
	if s.tree == nil {
		t, err := decodeTree(s.raw)
		if err != nil {
			return Options{}, fmt.Errorf("shared options: %w", err)
		}
		s.tree = t
	}
	patch, err := decodeTree(override)
	if err != nil {
		return Options{}, fmt.Errorf("options override: %w", err)
	}
	merged, err := json.Marshal(mergePatch(s.tree, patch))
	if err != nil {
		return Options{}, err
	}
	var o Options
	if err := json.Unmarshal(merged, &o); err != nil {
		return Options{}, fmt.Errorf("options override: %w", err)
	}
	return o, nil
}

// decodeTree decodes a JSON object keeping numbers as written.
func decodeTree(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object: %.40s", data)
	}
	return m, nil
}

// mergeDiff returns the merge patch that turns base into target: target's keys whose
// values differ (objects diffed recursively), and null for each key target lacks.
func mergeDiff(base, target map[string]any) map[string]any {
	patch := map[string]any{}
	for k, tv := range target {
		bv, ok := base[k]
		if !ok {
			patch[k] = tv
			continue
		}
		tm, tIsObj := tv.(map[string]any)
		bm, bIsObj := bv.(map[string]any)
		switch {
		case tIsObj && bIsObj:
			if sub := mergeDiff(bm, tm); len(sub) > 0 {
				patch[k] = sub
			}
		case !reflect.DeepEqual(bv, tv):
			patch[k] = tv
		}
	}
	for k := range base {
		if _, ok := target[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// mergePatch applies patch to base (RFC 7386) without changing base: maps along patched
// paths are new, the rest is shared with base.
func mergePatch(base, patch map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(patch))
	for k, v := range base {
		out[k] = v
	}
	for k, pv := range patch {
		if pv == nil {
			delete(out, k)
			continue
		}
		pm, ok := pv.(map[string]any)
		if !ok {
			out[k] = pv
			continue
		}
		bm, _ := out[k].(map[string]any) // RFC 7386: a non-object is patched as {}
		out[k] = mergePatch(bm, pm)
	}
	return out
}
