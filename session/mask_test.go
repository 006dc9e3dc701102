package session

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sensitiveTab answers Sensitive from a set of secret fields.
type sensitiveTab struct {
	Tab
	secret map[string]bool
}

func (t sensitiveTab) Sensitive(_ context.Context, target string) bool { return t.secret[target] }

// The feed shows what is filled into a secret field, or what looks like a credential, as
// MaskedText; other arguments as given.
func TestFeedArgsMaskSecrets(t *testing.T) {
	t.Parallel()
	tab := sensitiveTab{secret: map[string]bool{"e5": true, "#p": true, "": true}}
	same := func(s string) string { return s }
	for _, tc := range []struct {
		name string
		cmd  Command
		want []string
	}{
		{"user name", Command{Command: "fill", Args: []string{"e4", "ada"}}, []string{"e4", "ada"}},
		{"password by ref", Command{Command: "fill", Args: []string{"e5", "s3cret-pass"}}, []string{"e5", MaskedText}},
		{"password by selector, words", Command{Command: "fill", Args: []string{"#p", "correct", "horse"}}, []string{"#p", MaskedText, MaskedText}},
		{"token in a plain field", Command{Command: "fill", Args: []string{"e4", "ghp_abc"}}, []string{"e4", MaskedText}},
		{"key-shaped text", Command{Command: "type", Args: []string{"e4", "Zx81kQ0pLm2nB7vC"}}, []string{"e4", MaskedText}},
		{"type into the focused secret field", Command{Command: "type", Args: []string{"hunter2"}}, []string{MaskedText}},
		{"email", Command{Command: "fill", Args: []string{"e4", "ada.lovelace1815@example.com"}}, []string{"e4", "ada.lovelace1815@example.com"}},
		{"a click", Command{Command: "click", Args: []string{"e5"}}, []string{"e5"}},
		{"open", Command{Command: "open", Args: []string{"http://127.0.0.2:8080/login?next=%2Faccount123"}}, []string{"http://127.0.0.2:8080/login?next=%2Faccount123"}},
	} {
		if diff := cmp.Diff(tc.want, feedArgs(context.Background(), tab, tc.cmd, same)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
