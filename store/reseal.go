package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/authprofile"
)

// Webhook signing secrets (a batch's, a suite's) are sealed at rest like
// every other secret when the store has a sealer; rows written before, or
// without a key, hold them in plaintext, are still read, and are sealed by
// SealWebhookSecrets when the api starts with a key. Auth profiles' secrets
// and logins sealed under a key now old are sealed again under the current
// one by ResealAuthProfiles, so the old key can be dropped.

func batchHookAAD(batchID string) string { return "batch:" + batchID + ":webhook_secret" }
func suiteHookAAD(suiteID string) string { return "suite:" + suiteID + ":webhook_secret" }

// sealWebhookSecret is what a webhook row stores: the secret sealed with a
// sealer (plain nil), in plaintext without one.
func (s *Store) sealWebhookSecret(secret, aad string) (plain *string, sealed []byte, err error) {
	if s.sealer == nil {
		return &secret, nil, nil
	}
	sealed, err = s.sealer.Seal([]byte(secret), aad)
	return nil, sealed, err
}

// openWebhookSecret reads a webhook row's secret: sealed, or plaintext.
func (s *Store) openWebhookSecret(plain *string, sealed []byte, aad string) (string, error) {
	if sealed == nil {
		return deref(plain), nil
	}
	b, err := s.open(sealed, aad)
	if err != nil {
		return "", fmt.Errorf("the webhook signing secret: %w", err)
	}
	return string(b), nil
}

// resealChunk bounds the rows one statement of a start-up pass rewrites.
const resealChunk = 500

// SealWebhookSecrets seals the webhook signing secrets still in plaintext
// (batches' and suites'), and seals again under the current key those sealed
// under an old one. It returns how many rows it rewrote; without a sealer it
// does nothing.
func (s *Store) SealWebhookSecrets(ctx context.Context) (int, error) {
	if s.sealer == nil {
		return 0, nil
	}
	n := 0
	for _, t := range []struct{ table, id, plain, sealed string }{
		{"batch_webhooks", "batch_id", "secret", "secret_sealed"},
		{"suites", "id", "webhook_secret", "webhook_secret_sealed"},
	} {
		aad := batchHookAAD
		if t.table == "suites" {
			aad = suiteHookAAD
		}
		done, err := s.resealColumn(ctx, t.table, t.id, t.plain, t.sealed, aad)
		n += done
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// resealColumn rewrites, chunk by chunk, the rows of table whose secret is
// in plaintext (plainCol; "" when the table has none) or sealed under an old
// key. A value that does not open is left as it is (for an operator with the
// key), and so is a row another writer changed meanwhile.
func (s *Store) resealColumn(ctx context.Context, table, id, plainCol, sealedCol string, aad func(string) string) (int, error) {
	plainSel, plainSet := plainCol, plainCol+" = NULL, "
	if plainCol == "" {
		plainSel, plainSet = "NULL::text", ""
	}
	list := fmt.Sprintf(`SELECT %[2]s::text, %[3]s, %[4]s FROM %[1]s WHERE (%[3]s IS NOT NULL OR %[4]s IS NOT NULL)
		AND %[2]s::text > $1 ORDER BY %[2]s::text LIMIT $2`, table, id, plainSel, sealedCol)
	update := fmt.Sprintf(`UPDATE %[1]s SET %[2]s%[3]s = $2 WHERE %[4]s = $1 AND %[3]s IS NOT DISTINCT FROM $3`,
		table, plainSet, sealedCol, id)
	n, after := 0, ""
	for {
		rows, err := s.pool.Query(ctx, list, after, resealChunk)
		if err != nil {
			return n, fmt.Errorf("list %s secrets: %w", table, err)
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sealedRow, error) {
			var x sealedRow
			return x, r.Scan(&x.id, &x.plain, &x.sealed)
		})
		if err != nil {
			return n, fmt.Errorf("list %s secrets: %w", table, err)
		}
		for _, r := range all {
			after = r.id
			sealed, ok := s.resealValue(r.plain, r.sealed, aad(r.id))
			if !ok {
				continue
			}
			tag, err := s.pool.Exec(ctx, update, r.id, sealed, r.sealed)
			if err != nil {
				return n, fmt.Errorf("seal a secret of %s: %w", table, err)
			}
			n += int(tag.RowsAffected())
		}
		if len(all) < resealChunk {
			return n, nil
		}
	}
}

// sealedRow is one row's secret as a reseal pass reads it.
type sealedRow struct {
	id     string
	plain  *string
	sealed []byte
}

// resealValue is a secret sealed under the current key, when it needs it
// (plaintext, or sealed under an old key) and can be (it opens).
func (s *Store) resealValue(plain *string, sealed []byte, aad string) ([]byte, bool) {
	switch {
	case sealed != nil && s.sealer.SealedWithCurrent(sealed):
		return nil, false
	case sealed != nil:
		out, err := s.reseal(sealed, aad)
		return out, err == nil
	case plain != nil:
		out, err := s.sealer.Seal([]byte(*plain), aad)
		return out, err == nil
	}
	return nil, false
}

// ResealAuthProfiles seals again under the current key every auth profile's
// secrets and stored logins sealed under an old one (SNAPQ_SECRET_KEYS_OLD),
// so that key can then be dropped. Values that do not open are left as they
// are. It returns how many values it rewrote.
func (s *Store) ResealAuthProfiles(ctx context.Context) (int, error) {
	if s.sealer == nil {
		return 0, nil
	}
	n, err := s.resealColumn(ctx, "auth_profiles", "id", "", "secrets", authprofile.SecretsAAD)
	if err != nil {
		return n, err
	}
	rows, err := s.pool.Query(ctx, `SELECT profile_id::text, version, state FROM auth_profile_states`)
	if err != nil {
		return n, fmt.Errorf("list auth profile logins: %w", err)
	}
	type state struct {
		id      string
		version int
		sealed  []byte
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (state, error) {
		var x state
		return x, r.Scan(&x.id, &x.version, &x.sealed)
	})
	if err != nil {
		return n, fmt.Errorf("list auth profile logins: %w", err)
	}
	for _, st := range all {
		sealed, ok := s.resealValue(nil, st.sealed, authprofile.StateAAD(st.id))
		if !ok {
			continue
		}
		tag, err := s.pool.Exec(ctx, `UPDATE auth_profile_states SET state = $3 WHERE profile_id = $1 AND version = $2 AND state = $4`,
			st.id, st.version, sealed, st.sealed)
		if err != nil {
			return n, fmt.Errorf("reseal a login of auth profile %s: %w", st.id, err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}
