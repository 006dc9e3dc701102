package regression

import (
	"errors"
	"slices"
	"testing"

	"github.com/snapq/snapq/jobs"
)

func TestParseRunOptions(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   RunOptions
		fields []string
	}{
		{name: "empty", body: ``, want: RunOptions{}},
		{name: "all", body: `{"branch": "feature/x", "base_branch": "develop", "commit": "ABCDEF0", "base_url": "https://pr-1.example.com:8443/"}`,
			want: RunOptions{Branch: "feature/x", BaseBranch: "develop", Commit: "ABCDEF0", BaseURL: "https://pr-1.example.com:8443"}},
		{name: "bad", body: `{"branch": "a b", "commit": "xyz", "base_url": "ftp://x"}`, fields: []string{"branch", "commit", "base_url"}},
		{name: "path in base_url", body: `{"base_url": "https://x.example.com/app"}`, fields: []string{"base_url"}},
		{name: "base without branch", body: `{"base_branch": "main"}`, fields: []string{"base_branch"}},
		{name: "unknown field", body: `{"brnach": "x"}`, fields: []string{"brnach"}},
		{name: "environment pair", body: `{"compare_to_base_url": "https://www.example.com/"}`,
			want: RunOptions{CompareTo: "https://www.example.com"}},
		{name: "bad compare_to_base_url", body: `{"compare_to_base_url": "https://www.example.com/x?y"}`, fields: []string{"compare_to_base_url"}},
		{name: "compare_to_base_url not http", body: `{"compare_to_base_url": "file:///etc"}`, fields: []string{"compare_to_base_url"}},
		{name: "pair with itself", body: `{"base_url": "http://127.0.0.1:81", "compare_to_base_url": "http://127.0.0.1:81/"}`,
			fields: []string{"compare_to_base_url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRunOptions([]byte(tt.body))
			var ve *jobs.ValidationError
			if len(tt.fields) == 0 {
				if err != nil || got != tt.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if !errors.As(err, &ve) {
				t.Fatalf("err %v, want a validation error", err)
			}
			var fields []string
			for _, f := range ve.Fields {
				fields = append(fields, f.Field)
			}
			if !slices.Equal(fields, tt.fields) {
				t.Fatalf("fields %v, want %v", fields, tt.fields)
			}
		})
	}
}

func TestBaselineBranches(t *testing.T) {
	tests := []struct {
		name string
		run  Run
		want []string
	}{
		{name: "no branch", run: Run{}, want: []string{MainLine}},
		{name: "main named", run: Run{Branch: "main", BaseBranch: "main"}, want: []string{MainLine}},
		{name: "branch of main", run: Run{Branch: "feat", BaseBranch: "main"}, want: []string{"feat", MainLine}},
		{name: "branch of develop", run: Run{Branch: "feat", BaseBranch: "develop"}, want: []string{"feat", "develop", MainLine}},
		{name: "custom main", run: Run{Branch: "trunk", Spec: SuiteSpec{MainBranch: "trunk"}}, want: []string{MainLine}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.run.BaselineBranches(); !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWithBaseURL(t *testing.T) {
	ts := []SuiteTarget{{URL: "https://example.com/pricing?x=1#top", Name: "pricing"}}
	got, err := WithBaseURL(ts, "http://127.0.0.1:8080")
	if err != nil || got[0].URL != "http://127.0.0.1:8080/pricing?x=1#top" || ts[0].URL != "https://example.com/pricing?x=1#top" {
		t.Fatalf("got %+v, %v", got, err)
	}
}
