package authprofile

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// updateRepo keeps the one profile an Update writes.
type updateRepo struct {
	Repository
	saved *Profile
}

func (r *updateRepo) UpdateAuthProfile(_ context.Context, p *Profile) error { r.saved = p; return nil }

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// storedProfile is a recipe on site with the secret "password" sealed by sl.
func storedProfile(t *testing.T, sl *Sealer) *Profile {
	t.Helper()
	s := &Service{Repo: &updateRepo{}, Sealer: sl}
	body := `{"name": "shop", "origins": ["http://127.0.0.1:8080"], "login_url": "http://127.0.0.1:8080/login",
		"steps": [{"type": "type", "selector": "#p", "secret": "password"}], "success": {"selector": "#me"},
		"secrets": {"password": "hunter2-secret"}}`
	var in Input
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	p := &Profile{ID: jobs.NewID()}
	secrets := map[string]string{}
	var errs jobs.FieldErrors
	if in.apply(p, secrets, true, &errs); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := s.sealSecrets(p, secrets); err != nil {
		t.Fatal(err)
	}
	return p
}

// fieldOf is field when err is a validation error naming it, else the
// fields it names.
func fieldOf(err error, field string) string {
	var v *jobs.ValidationError
	if !errors.As(err, &v) {
		return ""
	}
	var all []string
	for _, f := range v.Fields {
		if f.Field == field {
			return field
		}
		all = append(all, f.Field)
	}
	return strings.Join(all, ",")
}

// TestPatchDropsSecretsWhenTheRecipeMoves: a PATCH that changes origins,
// login_url or steps keeps only the secrets it sends again; one that does
// not keeps them all.
func TestPatchDropsSecretsWhenTheRecipeMoves(t *testing.T) {
	t.Parallel()
	sl, err := NewSealer(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, body, field string }{
		{"origins", `{"origins": ["http://127.0.0.1:8080", "http://127.0.0.1:9999"]}`, "steps[0].secret"},
		{"login_url", `{"login_url": "http://127.0.0.1:8080/other"}`, "steps[0].secret"},
		{"steps", `{"steps": [{"type": "type", "selector": "#q", "secret": "password"}]}`, "steps[0].secret"},
		{"moved, secret sent again", `{"origins": ["http://127.0.0.1:9999"], "login_url": "http://127.0.0.1:9999/login",
			"secrets": {"password": "new"}}`, ""},
		{"same values", `{"origins": ["http://127.0.0.1:8080/"], "login_url": "http://127.0.0.1:8080/login",
			"steps": [{"secret": "password", "selector": "#p", "type": "type"}]}`, ""},
		{"name only", `{"name": "shop2"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := &updateRepo{}
			s := &Service{Repo: repo, Sealer: sl}
			cur := storedProfile(t, sl)
			p, err := s.Update(context.Background(), cur, []byte(tc.body))
			if tc.field != "" {
				if got := fieldOf(err, tc.field); got != tc.field {
					t.Fatalf("err %v (field %q), want a validation error naming %s", err, got, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			secrets, err := s.Secrets(p)
			if err != nil || secrets["password"] == "" || len(secrets) != 1 {
				t.Fatalf("secrets after the PATCH: %v %v", secrets, err)
			}
		})
	}
}

// TestPatchAfterTheOldKeyIsDropped: secrets sealed under a key the server
// no longer has can be replaced by a PATCH; a PATCH that does not send them
// is told why instead of failing to decrypt.
func TestPatchAfterTheOldKeyIsDropped(t *testing.T) {
	t.Parallel()
	old, _ := NewSealer(newKey(t))
	cur := storedProfile(t, old)
	sl, _ := NewSealer(newKey(t)) // the old key is gone
	s := &Service{Repo: &updateRepo{}, Sealer: sl}
	if _, err := s.Update(context.Background(), cur, []byte(`{"name": "renamed"}`)); fieldOf(err, "secrets") != "secrets" {
		t.Fatalf("PATCH without the secrets: %v, want a validation error naming secrets", err)
	}
	p, err := s.Update(context.Background(), cur, []byte(`{"secrets": {"password": "replaced-1"}}`))
	if err != nil {
		t.Fatalf("PATCH replacing the secret: %v", err)
	}
	if got, err := s.Secrets(p); err != nil || got["password"] != "replaced-1" || !sl.SealedWithCurrent(p.SealedSecrets) {
		t.Fatalf("secrets after the PATCH: %v %v", got, err)
	}
}
