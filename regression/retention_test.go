package regression

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
)

func TestSuiteRetentionFields(t *testing.T) {
	t.Parallel()
	const base = `{"name": "s", "targets": [{"url": "https://example.com/"}], `
	tests := []struct {
		name   string
		body   string
		fields []string // bad fields; nil: valid
		want   *Retention
	}{
		{name: "none", body: base + `"threshold": 0}`},
		{name: "both", body: base + `"retention": {"days": 30, "keep_runs": 20}}`, want: &Retention{Days: intp(30), KeepRuns: intp(20)}},
		{name: "days 0 keeps forever", body: base + `"retention": {"days": 0}}`, want: &Retention{Days: intp(0)}},
		{name: "keep_runs only", body: base + `"retention": {"keep_runs": 1}}`, want: &Retention{KeepRuns: intp(1)}},
		{name: "negative days", body: base + `"retention": {"days": -1}}`, fields: []string{"retention.days"}},
		{name: "too many days", body: base + `"retention": {"days": 36501}}`, fields: []string{"retention.days"}},
		{name: "keep_runs 0", body: base + `"retention": {"keep_runs": 0}}`, fields: []string{"retention.keep_runs"}},
		{name: "both bad", body: base + `"retention": {"days": -3, "keep_runs": -1}}`, fields: []string{"retention.days", "retention.keep_runs"}},
		{name: "empty", body: base + `"retention": {}}`, fields: []string{"retention"}},
		{name: "unknown field", body: base + `"retention": {"weeks": 2}}`, fields: []string{"retention.weeks"}},
		{name: "not a number", body: base + `"retention": {"days": "30"}}`, fields: []string{"retention.days"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSuite([]byte(tc.body))
			var verr *jobs.ValidationError
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("ParseSuite: %v", err)
				}
				if diff := cmp.Diff(tc.want, s.Spec.Retention); diff != "" {
					t.Errorf("retention (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.As(err, &verr) {
				t.Fatalf("ParseSuite: %v, want a validation error", err)
			}
			var got []string
			for _, f := range verr.Fields {
				got = append(got, f.Field)
			}
			if diff := cmp.Diff(tc.fields, got); diff != "" {
				t.Errorf("bad fields (-want +got):\n%s (%v)", diff, err)
			}
		})
	}
}

func intp(n int) *int { return &n }
