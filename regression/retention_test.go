package regression

import (
	"errors"
	"testing"
	"time"

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

func TestStaleBranchExpired(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	days := func(n int) *int { return &n }
	tests := []struct {
		name string
		b    StaleBranch
		def  int
		want bool
	}{
		{name: "idle past the default", b: StaleBranch{Branch: "f", LastActivity: now.Add(-31 * 24 * time.Hour)}, def: 30, want: true},
		{name: "exactly the default", b: StaleBranch{Branch: "f", LastActivity: now.Add(-30 * 24 * time.Hour)}, def: 30, want: true},
		{name: "active within", b: StaleBranch{Branch: "f", LastActivity: now.Add(-29 * 24 * time.Hour)}, def: 30},
		{name: "default off", b: StaleBranch{Branch: "f", LastActivity: now.Add(-999 * 24 * time.Hour)}, def: 0},
		{name: "suite keeps", b: StaleBranch{Branch: "f", LastActivity: now.Add(-999 * 24 * time.Hour), SuiteDays: days(0)}, def: 30},
		{name: "suite shorter", b: StaleBranch{Branch: "f", LastActivity: now.Add(-3 * 24 * time.Hour), SuiteDays: days(2)}, def: 30, want: true},
		{name: "main line never", b: StaleBranch{Branch: MainLine, LastActivity: now.Add(-999 * 24 * time.Hour)}, def: 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Expired(tt.def, now); got != tt.want {
				t.Fatalf("Expired = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBranchBaselineDaysValidated(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "branch_baseline_days": 7}`:     true,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "branch_baseline_days": 0}`:     true,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "branch_baseline_days": -1}`:    false,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "branch_baseline_days": 99999}`: false,
	} {
		s, err := ParseSuite([]byte(body))
		var ve *jobs.ValidationError
		if ok != (err == nil) || (!ok && (!errors.As(err, &ve) || ve.Fields[0].Field != "branch_baseline_days")) {
			t.Fatalf("%s: %v", body, err)
		}
		if ok && (s.Spec.BranchBaselineDays == nil || s.Input()["branch_baseline_days"] != *s.Spec.BranchBaselineDays) {
			t.Fatalf("%s: days %v not kept", body, s.Spec.BranchBaselineDays)
		}
	}
}
