package authprofile

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Secrets are write-only, and a PATCH keeps them so only while they go where
// they went: a PATCH that changes where the recipe runs or what it does
// (origins, login_url, steps) keeps only the secrets it sends again. Without
// this rule the key that owns a profile could point the recipe at a page of
// its own and have the stored password typed there.

// movesRecipe reports whether in changes cur's origins, login URL or steps.
func (in *Input) movesRecipe(cur *Profile) bool {
	if in.LoginURL != nil && *in.LoginURL != cur.Spec.LoginURL {
		return true
	}
	if in.Origins != nil && !sameOrigins(*in.Origins, cur.Origins) {
		return true
	}
	return in.Steps != nil && !sameSteps(*in.Steps, cur.Spec.Steps)
}

// sameOrigins compares origins as sets, normalized (an origin that does not
// parse is a change; validation refuses it anyway).
func sameOrigins(given, stored []string) bool {
	var norm []string
	for _, o := range given {
		n, ok := normalizeOrigin(o)
		if !ok {
			return false
		}
		if !slices.Contains(norm, n) {
			norm = append(norm, n)
		}
	}
	a, b := slices.Clone(norm), slices.Clone(stored)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// sameSteps compares steps as JSON values (key order and spacing aside).
func sameSteps(given, stored []json.RawMessage) bool {
	if len(given) != len(stored) {
		return false
	}
	for i := range given {
		if !bytes.Equal(canonical(given[i]), canonical(stored[i])) {
			return false
		}
	}
	return true
}

func canonical(raw json.RawMessage) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	return b
}

// keptSecrets is what a PATCH starts from: the stored secrets, or none when
// it moves the recipe or when they no longer open (sealed under a key this
// server does not have: the PATCH may then send them again). unreadable
// reports the latter for a profile that had secrets.
func (s *Service) keptSecrets(cur *Profile, in *Input) (secrets map[string]string, unreadable bool) {
	stored, err := s.Secrets(cur)
	if err != nil {
		return map[string]string{}, len(cur.SecretNames) > 0 || len(cur.SealedSecrets) > 0
	}
	if in.movesRecipe(cur) {
		return map[string]string{}, false
	}
	return stored, false
}
