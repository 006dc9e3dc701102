package store_test

import (
	"context"
	"testing"

	"github.com/snapq/snapq/regression"
)

// A suite's vcs token is stored, kept by a PATCH that does not name vcs and
// removed with "vcs": null; the comment id of a pull request is kept.
func TestSuiteVCS(t *testing.T) {
	t.Parallel()
	st := setup(t)
	st.SetSealer(testSealer(t))
	ctx := context.Background()
	g := &regression.Service{Repo: st, Queue: nopQueue{}}
	s, err := g.CreateSuite(ctx, "", []byte(`{"name": "site", "targets": [{"url": "https://example.com/", "name": "home"}],
		"vcs": {"provider": "gitlab", "repo": "group/site", "token": "glpat-1", "api_url": "https://gitlab.example.com/api/v4"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetSuite(ctx, s.ID)
	if err != nil || got.VCS == nil || got.VCS.Token != "glpat-1" || got.VCS.Repo != "group/site" {
		t.Fatalf("stored vcs %+v, %v", got.VCS, err)
	}
	if _, err := g.UpdateSuite(ctx, got, []byte(`{"name": "renamed"}`)); err != nil {
		t.Fatal(err)
	}
	got, _ = st.GetSuite(ctx, s.ID)
	if got.Name != "renamed" || got.VCS == nil || got.VCS.Token != "glpat-1" {
		t.Fatalf("after a PATCH without vcs: %+v", got.VCS)
	}
	if _, err := g.CreateSuite(ctx, "", []byte(`{"name": "bad", "targets": [{"url": "https://example.com/"}],
		"vcs": {"provider": "github", "repo": "nope"}}`)); err == nil {
		t.Fatal("a vcs without a token and with a bad repo was accepted")
	}
	if id, err := st.VCSComment(ctx, s.ID, 7); err != nil || id != "" {
		t.Fatalf("comment before any: %q, %v", id, err)
	}
	for _, id := range []string{"100", "101"} {
		if err := st.SetVCSComment(ctx, s.ID, 7, id); err != nil {
			t.Fatal(err)
		}
	}
	if id, err := st.VCSComment(ctx, s.ID, 7); err != nil || id != "101" {
		t.Fatalf("comment id %q, %v", id, err)
	}
	if _, err := g.UpdateSuite(ctx, got, []byte(`{"vcs": null}`)); err != nil {
		t.Fatal(err)
	}
	if got, _ = st.GetSuite(ctx, s.ID); got.VCS != nil {
		t.Fatalf("after vcs: null: %+v", got.VCS)
	}
}
