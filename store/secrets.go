package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/regression"
)

// A suite's secrets (its vcs token, its notify channels' URLs and signing
// secrets) are sealed at rest with the auth profiles' sealer (AES-256-GCM
// under SNAPQ_SECRET_KEY, old keys in SNAPQ_SECRET_KEYS_OLD). Each sealed
// value is bound to its suite and field, so a ciphertext copied into another
// row does not open. Rows written before encryption hold the token in the
// plaintext vcs_token column: it is still read, sealed on the suite's next
// write, and SealSuiteSecrets (run by the api at start) seals them all.

// SetSealer gives the store the key that seals suites' secrets; without one
// a suite with a vcs token or notify channels cannot be written
// (regression.ErrNoSecretKey), and sealed ones read back without secrets
// (Suite.SecretsErr says why).
func (s *Store) SetSealer(sl *authprofile.Sealer) { s.sealer = sl }

func vcsTokenAAD(suiteID string) string { return "suite:" + suiteID + ":vcs_token" }
func notifyAAD(suiteID string) string   { return "suite:" + suiteID + ":notify" }

// channelSecret is what notify_sealed holds for one channel.
type channelSecret struct {
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}

// suiteSecrets are a suite's secret-bearing columns as written.
type suiteSecrets struct {
	vcs, vcsSealed, notify, notifySealed []byte
	hookPlain                            *string // the webhook's signing secret, without a sealer
	hookSealed                           []byte
}

// sealSuiteSecrets splits the suite's vcs and notify into their public JSON
// and their sealed secrets.
func (s *Store) sealSuiteSecrets(su *regression.Suite) (suiteSecrets, error) {
	var out suiteSecrets
	var err error
	if su.Webhook != nil {
		if out.hookPlain, out.hookSealed, err = s.sealWebhookSecret(su.Webhook.Secret, suiteHookAAD(su.ID)); err != nil {
			return out, err
		}
	}
	if su.VCS != nil {
		if out.vcs, err = json.Marshal(su.VCS.Public()); err != nil {
			return out, err
		}
		if su.VCS.Token != "" {
			if out.vcsSealed, err = s.seal([]byte(su.VCS.Token), vcsTokenAAD(su.ID)); err != nil {
				return out, err
			}
		}
	}
	if len(su.Notify) > 0 {
		public := make([]regression.Channel, len(su.Notify))
		secrets := make(map[string]channelSecret, len(su.Notify))
		for i, c := range su.Notify {
			public[i] = c.Public()
			secrets[c.ID] = channelSecret{URL: c.URL, Secret: c.Secret}
		}
		if out.notify, err = json.Marshal(public); err != nil {
			return out, err
		}
		plain, err := json.Marshal(secrets)
		if err != nil {
			return out, err
		}
		if out.notifySealed, err = s.seal(plain, notifyAAD(su.ID)); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *Store) seal(plain []byte, aad string) ([]byte, error) {
	if s.sealer == nil {
		return nil, regression.ErrNoSecretKey
	}
	return s.sealer.Seal(plain, aad)
}

// openSuiteSecrets fills in the suite's vcs and notify from their columns.
// A secret that does not open leaves the field empty and says why in
// su.SecretsErr; a column that does not decode is an error.
func (s *Store) openSuiteSecrets(su *regression.Suite, vcs []byte, plainToken string, vcsSealed, notify, notifySealed []byte) error {
	if vcs != nil {
		su.VCS = &regression.VCS{}
		if err := json.Unmarshal(vcs, su.VCS); err != nil {
			return fmt.Errorf("suite %s vcs: %w", su.ID, err)
		}
		su.VCS.Token = plainToken // a row not sealed yet
		if vcsSealed != nil {
			tok, err := s.open(vcsSealed, vcsTokenAAD(su.ID))
			if err != nil {
				su.SecretsErr = fmt.Errorf("the vcs token: %w", err)
			}
			su.VCS.Token = string(tok)
		}
	}
	if notify != nil {
		if err := json.Unmarshal(notify, &su.Notify); err != nil {
			return fmt.Errorf("suite %s notify: %w", su.ID, err)
		}
		if notifySealed != nil {
			plain, err := s.open(notifySealed, notifyAAD(su.ID))
			secrets := map[string]channelSecret{}
			if err == nil {
				err = json.Unmarshal(plain, &secrets)
			}
			if err != nil {
				su.SecretsErr = errors.Join(su.SecretsErr, fmt.Errorf("the notify channels' urls: %w", err))
			}
			for i, c := range su.Notify {
				su.Notify[i].URL, su.Notify[i].Secret = secrets[c.ID].URL, secrets[c.ID].Secret
			}
		}
	}
	return nil
}

func (s *Store) open(sealed []byte, aad string) ([]byte, error) {
	if s.sealer == nil {
		return nil, regression.ErrNoSecretKey
	}
	return s.sealer.Open(sealed, aad)
}

// SealSuiteSecrets seals every vcs token still stored in plaintext, and seals
// again under the current key the secrets sealed under an old one. It
// returns how many suites it rewrote. Without a sealer it only counts the
// plaintext tokens (the api warns about them).
func (s *Store) SealSuiteSecrets(ctx context.Context) (int, error) {
	if s.sealer == nil {
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM suites WHERE vcs_token IS NOT NULL`).Scan(&n)
		return n, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM suites WHERE vcs_token IS NOT NULL
		OR vcs_token_sealed IS NOT NULL OR notify_sealed IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("list suites with secrets: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("list suites with secrets: %w", err)
	}
	n := 0
	for _, id := range ids {
		done, err := s.resealSuite(ctx, id)
		if err != nil {
			return n, err
		}
		if done {
			n++
		}
	}
	return n, nil
}

// resealSuite rewrites one suite's secrets under the current key when one
// is in plaintext or sealed under an old key; a suite whose secrets do not
// open is left as it is.
func (s *Store) resealSuite(ctx context.Context, id string) (bool, error) {
	done := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var plain *string
		var vcsSealed, notifySealed []byte
		err := tx.QueryRow(ctx, `SELECT vcs_token, vcs_token_sealed, notify_sealed FROM suites WHERE id = $1 FOR UPDATE`, id).
			Scan(&plain, &vcsSealed, &notifySealed)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		stale := func(b []byte) bool { return b != nil && !s.sealer.SealedWithCurrent(b) }
		if plain == nil && !stale(vcsSealed) && !stale(notifySealed) {
			return nil
		}
		if plain != nil && *plain != "" && vcsSealed == nil {
			if vcsSealed, err = s.sealer.Seal([]byte(*plain), vcsTokenAAD(id)); err != nil {
				return err
			}
		} else if stale(vcsSealed) {
			if vcsSealed, err = s.reseal(vcsSealed, vcsTokenAAD(id)); err != nil {
				return nil // does not open: leave it for an operator with the key
			}
		}
		if stale(notifySealed) {
			if notifySealed, err = s.reseal(notifySealed, notifyAAD(id)); err != nil {
				return nil
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE suites SET vcs_token = NULL, vcs_token_sealed = $2, notify_sealed = $3 WHERE id = $1`,
			id, vcsSealed, notifySealed); err != nil {
			return fmt.Errorf("seal the secrets of suite %s: %w", id, err)
		}
		done = true
		return nil
	})
	return done, err
}

func (s *Store) reseal(sealed []byte, aad string) ([]byte, error) {
	plain, err := s.sealer.Open(sealed, aad)
	if err != nil {
		return nil, err
	}
	return s.sealer.Seal(plain, aad)
}
