package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

func secretKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func testSealer(t *testing.T, old ...[]byte) *authprofile.Sealer {
	t.Helper()
	sl, err := authprofile.NewSealer(secretKey(t), old...)
	if err != nil {
		t.Fatal(err)
	}
	return sl
}

// setupURL is setup, also returning its database URL (a schema of its own).
func setupURL(t *testing.T) (*store.Store, string) {
	t.Helper()
	url := testenv.DatabaseURL(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, url
}

// suiteRow is a suite's secret-bearing columns as Postgres holds them.
func suiteRow(t *testing.T, dbURL, id string) (plain *string, vcsSealed, notify, notifySealed []byte) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), `SELECT vcs_token, vcs_token_sealed, notify, notify_sealed FROM suites WHERE id = $1`, id).
		Scan(&plain, &vcsSealed, &notify, &notifySealed); err != nil {
		t.Fatal(err)
	}
	return plain, vcsSealed, notify, notifySealed
}

func execSQL(t *testing.T, dbURL, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// The vcs token and the channels' urls and secrets are stored only sealed:
// no column holds them in clear, they open with the key (and an old one
// after a rotation), and without a key a suite with secrets is refused.
func TestSuiteSecretsSealed(t *testing.T) {
	t.Parallel()
	st, db := setupURL(t)
	oldKey := secretKey(t)
	sl, err := authprofile.NewSealer(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	st.SetSealer(sl)
	ctx := context.Background()
	g := &regression.Service{Repo: st, Queue: nopQueue{}, MailDomains: regression.MailDomains{"example.com"}}
	const token, hook, secret = "ghp_SEALEDTOKEN", "https://hooks.slack.com/services/T0/B0/SEALEDHOOK", "sealed-signing-secret-0123456789"
	s, err := g.CreateSuite(ctx, "", []byte(`{"name": "sealed", "targets": [{"url": "https://example.com/"}],
		"vcs": {"provider": "github", "repo": "acme/site", "token": "`+token+`"},
		"notify": [{"kind": "slack", "url": "`+hook+`", "on": ["failed"]},
			{"kind": "webhook", "url": "https://example.com/hook", "secret": "`+secret+`"},
			{"kind": "email", "to": ["ops@example.com"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	plain, vcsSealed, notify, notifySealed := suiteRow(t, db, s.ID)
	if plain != nil || vcsSealed == nil || notifySealed == nil {
		t.Fatalf("columns: plaintext %v, sealed token %d bytes, sealed notify %d bytes", plain, len(vcsSealed), len(notifySealed))
	}
	for _, col := range [][]byte{vcsSealed, notify, notifySealed} {
		for _, secretText := range []string{token, hook, "SEALEDHOOK", secret} {
			if bytes.Contains(col, []byte(secretText)) {
				t.Fatalf("a column holds %q in clear: %q", secretText, col)
			}
		}
	}
	got, err := st.GetSuite(ctx, s.ID)
	if err != nil || got.SecretsErr != nil || got.VCS.Token != token || len(got.Notify) != 3 ||
		got.Notify[0].URL != hook || got.Notify[1].Secret != secret || got.Notify[2].To[0] != "ops@example.com" {
		t.Fatalf("read back: %+v %+v, %v", got.VCS, got.Notify, err)
	}
	// A PATCH naming a channel by id without its url keeps its url.
	upd, err := g.UpdateSuite(ctx, got, []byte(`{"notify": [{"id": "`+got.Notify[0].ID+`", "kind": "slack", "on": ["error"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ = st.GetSuite(ctx, s.ID); len(got.Notify) != 1 || got.Notify[0].URL != hook || got.Notify[0].On[0] != "error" || got.VCS.Token != token {
		t.Fatalf("after the PATCH: %+v %+v (%v)", got.Notify, got.VCS, upd)
	}

	// Rotation: the old key still opens; the pass seals again under the new one.
	rotated, err := authprofile.NewSealer(secretKey(t), oldKey)
	if err != nil {
		t.Fatal(err)
	}
	st.SetSealer(rotated)
	if got, _ = st.GetSuite(ctx, s.ID); got.SecretsErr != nil || got.VCS.Token != token {
		t.Fatalf("with the key made old: %+v, %v", got.VCS, got.SecretsErr)
	}
	if n, err := st.SealSuiteSecrets(ctx); err != nil || n < 1 {
		t.Fatalf("reseal: %d, %v", n, err)
	}
	_, vcsSealed, _, notifySealed = suiteRow(t, db, s.ID)
	if !rotated.SealedWithCurrent(vcsSealed) || !rotated.SealedWithCurrent(notifySealed) {
		t.Fatal("after the pass the secrets are not sealed under the current key")
	}

	// Without a key: the secrets read back empty, with the reason; writes are refused.
	st.SetSealer(nil)
	if got, _ = st.GetSuite(ctx, s.ID); got.SecretsErr == nil || got.VCS.Token != "" {
		t.Fatalf("without a key: token %q, err %v", got.VCS.Token, got.SecretsErr)
	}
	_, err = g.CreateSuite(ctx, "", []byte(`{"name": "nokey", "targets": [{"url": "https://example.com/"}],
		"notify": [{"kind": "slack", "url": "`+hook+`"}]}`))
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) || ve.Fields[0].Code != "secret_key_required" {
		t.Fatalf("a suite with secrets and no key: %v", err)
	}
}

// A token stored in plaintext before encryption is still read, and the
// api's start-up pass seals it and empties the plaintext column.
func TestPlaintextTokenSealedAtStart(t *testing.T) {
	t.Parallel()
	st, db := setupURL(t)
	ctx := context.Background()
	sl := testSealer(t)
	st.SetSealer(sl)
	g := &regression.Service{Repo: st, Queue: nopQueue{}}
	s, err := g.CreateSuite(ctx, "", []byte(`{"name": "legacy", "targets": [{"url": "https://example.com/"}],
		"vcs": {"provider": "gitlab", "repo": "group/site", "token": "glpat-new"}}`))
	if err != nil {
		t.Fatal(err)
	}
	// As a row written by 0012's code: the token in clear, nothing sealed.
	execSQL(t, db, `UPDATE suites SET vcs_token = 'glpat-legacy', vcs_token_sealed = NULL WHERE id = $1`, s.ID)
	if got, err := st.GetSuite(ctx, s.ID); err != nil || got.VCS.Token != "glpat-legacy" {
		t.Fatalf("plaintext row read: %+v, %v", got.VCS, err)
	}
	if n, err := st.SealSuiteSecrets(ctx); err != nil || n < 1 {
		t.Fatalf("seal pass: %d, %v", n, err)
	}
	plain, sealed, _, _ := suiteRow(t, db, s.ID)
	if plain != nil || sealed == nil || bytes.Contains(sealed, []byte("glpat-legacy")) {
		t.Fatalf("after the pass: plaintext %v, sealed %q", plain, sealed)
	}
	if got, err := st.GetSuite(ctx, s.ID); err != nil || got.VCS.Token != "glpat-legacy" {
		t.Fatalf("sealed row read: %+v, %v", got.VCS, err)
	}
}
