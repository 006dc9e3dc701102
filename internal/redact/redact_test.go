package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/url"
	"strings"
	"testing"
)

const secret = `p w+/&="<>'%?#;é-0123456789`

// carriers are texts that carry the secret in one encoding each, inside
// larger text, as a message, a URL, a page or a log line would.
func carriers() map[string]string {
	j, _ := json.Marshal(map[string]string{"password": secret})
	b64 := func(prefix string) string {
		return base64.StdEncoding.EncodeToString([]byte(prefix + secret + "tail"))
	}
	return map[string]string{
		"raw":          "the password is " + secret + " ok",
		"query":        "ended on http://h/login?user=a&password=" + url.QueryEscape(secret) + "&x=1",
		"query lower":  "ended on /login?password=" + strings.ToLower(url.QueryEscape(secret)),
		"uri comp":     "fetch('/x?v=" + strings.ReplaceAll(url.QueryEscape(secret), "+", "%20") + "')",
		"path":         "GET /u/" + url.PathEscape(secret) + "/x",
		"form":         url.Values{"password": {secret}, "user": {"a"}}.Encode(),
		"double":       "/login?next=" + url.QueryEscape("/x?password="+url.QueryEscape(secret)),
		"json":         string(j),
		"html":         "<input value=\"" + html.EscapeString(secret) + "\">",
		"hex":          "dump " + hex.EncodeToString([]byte(secret)),
		"HEX":          "DUMP " + strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"base64 +0":    b64(""),
		"base64 +1":    b64("a"),
		"base64 +2":    b64("ab"),
		"base64url +1": base64.RawURLEncoding.EncodeToString([]byte("x" + secret)),
	}
}

func TestMaskEveryEncoding(t *testing.T) {
	m := New("other-secret", secret)
	for name, text := range carriers() {
		t.Run(name, func(t *testing.T) {
			got := m.Mask(text)
			if !strings.Contains(got, Mask) {
				t.Fatalf("nothing masked in %q", got)
			}
			for _, enc := range Encodings(secret) {
				if strings.Contains(got, enc) {
					t.Fatalf("%q still holds %q", got, enc)
				}
			}
			// The secret's longest distinctive piece is gone in any form
			// the test knows of.
			if strings.Contains(got, "0123456789") || strings.Contains(got, hex.EncodeToString([]byte("0123456789"))) {
				t.Fatalf("%q still holds the secret", got)
			}
		})
	}
}

func TestMaskLeavesOtherText(t *testing.T) {
	m := New("hunter2-long-enough")
	for _, s := range []string{"", "nothing to see", "action 2 (type) failed: no element matches \"#pw\""} {
		if got := m.Mask(s); got != s {
			t.Errorf("Mask(%q) = %q", s, got)
		}
	}
	var zero *Masker
	if zero.Mask("x") != "x" || New().Mask("x") != "x" || New("").Mask("x") != "x" {
		t.Error("a masker of no secret changed text")
	}
}

func TestURLs(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"query", "the login ended on http://127.0.0.1:8080/login?user=a&password=x+y, not under", "the login ended on http://127.0.0.1:8080/login?… not under"},
		{"fragment", "went to https://h/p#token=abc", "went to https://h/p?…"},
		{"userinfo", "https://bob:pw@h/x ok", "https://h/x ok"},
		{"at in path", "https://h/u@x", "https://h/u@x"},
		{"none", "no url here", "no url here"},
		{"two", "http://a/x?q=1 and http://b/y", "http://a/x?… and http://b/y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := URLs(tc.in); got != tc.want {
				t.Fatalf("URLs(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	for range b.N {
		New(secret, "another-password-1234")
	}
}
