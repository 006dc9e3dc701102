package regression

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/snapq/snapq/jobs"
)

func TestSettingsForPresetsAndOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		suite  string // the suite document's fields besides name and targets
		target string // the target's fields besides url and name
		want   Settings
	}{
		{name: "no preset: the old defaults", want: Settings{Sensitivity: Sensitivity{Threshold: 0, PixelThreshold: 0.1}}},
		{name: "strict", suite: `"preset":"strict"`, want: Settings{Sensitivity: Sensitivity{Threshold: 0, PixelThreshold: 0, IncludeAA: true}}},
		{name: "recommended", suite: `"preset":"recommended"`, want: Settings{Sensitivity: Sensitivity{Threshold: 0.001, PixelThreshold: 0.1}}},
		{name: "relaxed", suite: `"preset":"relaxed"`, want: Settings{Sensitivity: Sensitivity{Threshold: 0.01, PixelThreshold: 0.2}}},
		{name: "explicit fields override the suite's preset", suite: `"preset":"relaxed","threshold":0.05,"include_aa":true`,
			want: Settings{Sensitivity: Sensitivity{Threshold: 0.05, PixelThreshold: 0.2, IncludeAA: true}}},
		{name: "bands", suite: `"auto_approve_below":0.002,"fail_above":0.2`,
			want: Settings{Sensitivity: Sensitivity{PixelThreshold: 0.1}, AutoApproveBelow: 0.002, FailAbove: 0.2}},
		{name: "a target's preset replaces the suite's sensitivity, keeps its bands", suite: `"preset":"relaxed","fail_above":0.3`,
			target: `"preset":"strict"`, want: Settings{Sensitivity: Sensitivity{IncludeAA: true}, FailAbove: 0.3}},
		{name: "a target's explicit fields override its preset", suite: `"preset":"relaxed"`,
			target: `"preset":"strict","pixel_threshold":0.05,"auto_approve_below":0.01`,
			want:   Settings{Sensitivity: Sensitivity{PixelThreshold: 0.05, IncludeAA: true}, AutoApproveBelow: 0.01}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"name":"s","targets":[{"url":"https://example.com/","name":"home"` + comma(tc.target) + `}]` + comma(tc.suite) + `}`
			s, err := ParseSuite([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			if got := s.Spec.SettingsFor("home"); got != tc.want {
				t.Fatalf("settings %+v, want %+v", got, tc.want)
			}
			// The stored spec round-trips (runs copy it as JSON).
			var back SuiteSpec
			raw, _ := json.Marshal(s.Spec)
			if err := json.Unmarshal(raw, &back); err != nil || back.SettingsFor("home") != tc.want {
				t.Fatalf("round trip: %+v, %v", back.SettingsFor("home"), err)
			}
		})
	}
}

func comma(s string) string {
	if s == "" {
		return ""
	}
	return "," + s
}

func TestTriageValidation(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, doc, field string }{
		{"unknown preset", `"preset":"lenient"`, "preset"},
		{"band above 1", `"fail_above":1.5`, "fail_above"},
		{"band of 0", `"auto_approve_below":0`, "auto_approve_below"},
		{"auto above fail", `"auto_approve_below":0.3,"fail_above":0.2`, "auto_approve_below"},
		{"target preset", `"targets":[{"url":"https://example.com/","preset":"x"}]`, "targets[0].preset"},
		{"target threshold", `"targets":[{"url":"https://example.com/","threshold":2}]`, "targets[0].threshold"},
		{"target bands", `"targets":[{"url":"https://example.com/","auto_approve_below":0.5,"fail_above":0.1}]`, "targets[0].auto_approve_below"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"name":"s",` + tc.doc + `}`
			if !strings.Contains(tc.doc, `"targets"`) {
				doc = `{"name":"s","targets":[{"url":"https://example.com/"}],` + tc.doc + `}`
			}
			_, err := ParseSuite([]byte(doc))
			var ve *jobs.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("%s: error %v, want a validation error", doc, err)
			}
			for _, f := range ve.Fields {
				if f.Field == tc.field {
					return
				}
			}
			t.Fatalf("%s: fields %+v, want one naming %s", doc, ve.Fields, tc.field)
		})
	}
}

func TestApplyBands(t *testing.T) {
	t.Parallel()
	set := Settings{Sensitivity: Sensitivity{Threshold: 0.01}, AutoApproveBelow: 0.001, FailAbove: 0.005}
	tests := []struct {
		name       string
		in         Comparison
		wantStatus CompareStatus
		wantAuto   bool
		wantMsg    string
	}{
		{"below the band passes, auto-approved", Comparison{Status: CompareFailed, DiffPixels: 5, DiffRatio: 0.0005}, ComparePassed, true, "auto-approved"},
		{"a size change is never auto-approved", Comparison{Status: CompareFailed, DiffRatio: 0.0005, sizeChanged: true}, CompareFailed, false, ""},
		{"zero stays as it was", Comparison{Status: ComparePassed}, ComparePassed, false, ""},
		{"within the threshold but above fail_above fails", Comparison{Status: ComparePassed, DiffRatio: 0.008}, CompareFailed, false, "fail_above"},
		{"between the bands, within the threshold: passes", Comparison{Status: ComparePassed, DiffRatio: 0.003}, ComparePassed, false, ""},
		{"above the threshold stays failed", Comparison{Status: CompareFailed, DiffRatio: 0.02}, CompareFailed, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.in
			set.applyBands(&c)
			if c.Status != tc.wantStatus || c.AutoApproved != tc.wantAuto || !strings.Contains(c.Message, tc.wantMsg) {
				t.Fatalf("got %s auto=%v %q, want %s auto=%v containing %q", c.Status, c.AutoApproved, c.Message, tc.wantStatus, tc.wantAuto, tc.wantMsg)
			}
		})
	}
}

// PATCHing the preset alone changes the values it set: Input leaves them to it.
func TestInputLeavesPresetValuesToThePreset(t *testing.T) {
	t.Parallel()
	s, err := ParseSuite([]byte(`{"name":"s","targets":[{"url":"https://example.com/"}],"preset":"strict","pixel_threshold":0.05}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := s.Input()
	doc["preset"] = "relaxed"
	raw, _ := json.Marshal(doc)
	s2, err := ParseSuite(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := Sensitivity{Threshold: 0.01, PixelThreshold: 0.05, IncludeAA: false} // pixel_threshold was explicit
	if got := s2.Spec.SettingsFor("x").Sensitivity; got != want {
		t.Fatalf("after the patch %+v, want %+v", got, want)
	}
}
