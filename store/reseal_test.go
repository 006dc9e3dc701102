package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

const hookSecret = "whsig-0123456789-SEALME"

// queryRow scans one row of sql.
func queryRow(t *testing.T, dbURL, sql string, args []any, dest ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(dest...); err != nil {
		t.Fatal(err)
	}
}

func hookBatch(t *testing.T, st *store.Store) *jobs.Batch {
	t.Helper()
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}}
	b, _, _, err := svc.Submit(context.Background(), jobs.Submission{Body: []byte(`{"urls": ["https://example.com/"],
		"webhook": {"url": "https://example.com/hook", "secret": "` + hookSecret + `"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWebhookSecretsSealed: with a key, a batch's and a suite's webhook
// signing secrets are stored only sealed and read back; rows in plaintext
// (written before, or without a key) still sign, and the start-up pass
// seals them; after a rotation the pass seals under the new key.
func TestWebhookSecretsSealed(t *testing.T) {
	t.Parallel()
	st, db := setupURL(t)
	ctx := context.Background()
	oldKey := secretKey(t)
	sl, _ := authprofile.NewSealer(oldKey)
	st.SetSealer(sl)
	b := hookBatch(t, st)
	g := &regression.Service{Repo: st, Queue: nopQueue{}}
	su, err := g.CreateSuite(ctx, "", []byte(`{"name": "hooked", "targets": [{"url": "https://example.com/"}],
		"webhook": {"url": "https://example.com/hook", "secret": "`+hookSecret+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var plain *string
	var sealed []byte
	queryRow(t, db, `SELECT secret, secret_sealed FROM batch_webhooks WHERE batch_id = $1`, []any{b.ID}, &plain, &sealed)
	if plain != nil || sealed == nil || bytes.Contains(sealed, []byte(hookSecret)) {
		t.Fatalf("batch webhook row: plaintext %v, sealed %q", plain, sealed)
	}
	queryRow(t, db, `SELECT webhook_secret, webhook_secret_sealed FROM suites WHERE id = $1`, []any{su.ID}, &plain, &sealed)
	if plain != nil || sealed == nil {
		t.Fatalf("suite row: plaintext %v, sealed %d bytes", plain, len(sealed))
	}
	if w, err := st.GetBatchWebhook(ctx, b.ID); err != nil || w.Secret != hookSecret {
		t.Fatalf("batch webhook read back: %+v %v", w, err)
	}
	if got, err := st.GetSuite(ctx, su.ID); err != nil || got.Webhook.Secret != hookSecret || got.SecretsErr != nil {
		t.Fatalf("suite webhook read back: %+v %v", got, err)
	}

	// A row from before: plaintext, still signs; the pass seals it.
	execSQL(t, db, `UPDATE batch_webhooks SET secret = $2, secret_sealed = NULL WHERE batch_id = $1`, b.ID, hookSecret)
	if w, err := st.GetBatchWebhook(ctx, b.ID); err != nil || w.Secret != hookSecret {
		t.Fatalf("plaintext row read: %+v %v", w, err)
	}
	// Rotation: the suite's secret sealed under the old key is sealed again.
	rotated, _ := authprofile.NewSealer(secretKey(t), oldKey)
	st.SetSealer(rotated)
	if n, err := st.SealWebhookSecrets(ctx); err != nil || n != 2 {
		t.Fatalf("seal pass: %d rows, %v; want 2", n, err)
	}
	queryRow(t, db, `SELECT secret, secret_sealed FROM batch_webhooks WHERE batch_id = $1`, []any{b.ID}, &plain, &sealed)
	if plain != nil || !rotated.SealedWithCurrent(sealed) {
		t.Fatalf("after the pass: plaintext %v, sealed under the current key %v", plain, rotated.SealedWithCurrent(sealed))
	}
	queryRow(t, db, `SELECT webhook_secret_sealed FROM suites WHERE id = $1`, []any{su.ID}, &sealed)
	if !rotated.SealedWithCurrent(sealed) {
		t.Fatal("the suite's webhook secret is not sealed under the current key")
	}
	if w, err := st.GetBatchWebhook(ctx, b.ID); err != nil || w.Secret != hookSecret {
		t.Fatalf("after the pass: %+v %v", w, err)
	}
}

// TestKeyRotationResealsAuthProfiles: after a rotation the start-up pass
// seals a profile's secrets and logins again under the new key, so the old
// key can be dropped and the profile still opens.
func TestKeyRotationResealsAuthProfiles(t *testing.T) {
	t.Parallel()
	st, db := setupURL(t)
	ctx := context.Background()
	oldKey := secretKey(t)
	sl, _ := authprofile.NewSealer(oldKey)
	svc := &authprofile.Service{Repo: st, Sealer: sl}
	p, err := svc.Create(ctx, "", []byte(`{"name": "shop", "origins": ["https://example.com"],
		"login_url": "https://example.com/login", "steps": [{"type": "type", "selector": "#p", "secret": "pw"}],
		"success": {"selector": "#me"}, "secrets": {"pw": "hunter2-rotate"},
		"storage_state": {"cookies": [{"name": "sid", "value": "abc", "domain": "example.com", "path": "/"}], "origins": []}}`))
	if err != nil {
		t.Fatal(err)
	}
	newKey := secretKey(t)
	rotated, _ := authprofile.NewSealer(newKey, oldKey)
	st.SetSealer(rotated)
	if n, err := st.ResealAuthProfiles(ctx); err != nil || n != 2 {
		t.Fatalf("reseal: %d values, %v; want 2 (secrets + login)", n, err)
	}
	if n, _ := st.ResealAuthProfiles(ctx); n != 0 {
		t.Fatalf("a second pass rewrote %d values", n)
	}
	// The old key dropped.
	only, _ := authprofile.NewSealer(newKey)
	cur, err := st.GetAuthProfile(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := (&authprofile.Service{Repo: st, Sealer: only}).Secrets(cur)
	if err != nil || secrets["pw"] != "hunter2-rotate" {
		t.Fatalf("secrets with the new key only: %v %v", secrets, err)
	}
	var state []byte
	queryRow(t, db, `SELECT state FROM auth_profile_states WHERE profile_id = $1`, []any{p.ID}, &state)
	plain, err := only.Open(state, authprofile.StateAAD(p.ID))
	if err != nil || !json.Valid(plain) {
		t.Fatalf("login with the new key only: %v", err)
	}
}
