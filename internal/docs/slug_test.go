package docs

import "testing"

// TestSlug pins the anchor rule to anchors GitHub gives these headings.
func TestSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, heading, want string }{
		{"plain", "How it works", "how-it-works"},
		{"punctuation", "Politeness (host cap)", "politeness-host-cap"},
		{"code and dash", "Live events (SSE) — `GET /v1/batches/:id/events`, `GET /v1/runs/:id/events`",
			"live-events-sse--get-v1batchesidevents-get-v1runsidevents"},
		{"arrow", "Submit a batch — `POST /v1/batches` → `202`", "submit-a-batch--post-v1batches--202"},
		{"underscore kept", "`SNAPQ_AUTH` and friends", "snapq_auth-and-friends"},
		{"link text", "See [the API](api/README.md)", "see-the-api"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("%s: slug(%q) = %q, want %q", tc.name, tc.heading, got, tc.want)
		}
	}
	a := headingAnchors("# A\n## A\n```\n# not a heading\n```\n### A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !a[want] {
			t.Errorf("headingAnchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a comment in a code block was taken for a heading")
	}
}
