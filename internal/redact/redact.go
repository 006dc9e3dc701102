package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Mask is what replaces a secret.
const Mask = "••••"

// minFragment is the shortest base64 fragment of a secret at an offset that
// is masked: a shorter one would mask unrelated text (a secret of fewer than
// 6 bytes is masked in its other encodings and its aligned base64 only).
const minFragment = 6

// Masker replaces every encoding of a set of secrets. The zero value masks
// nothing.
type Masker struct {
	r *strings.Replacer
}

// New is the masker of secrets (empty ones are ignored).
func New(secrets ...string) *Masker {
	set := map[string]struct{}{}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, e := range Encodings(s) {
			if e != "" {
				set[e] = struct{}{}
			}
		}
	}
	if len(set) == 0 {
		return &Masker{}
	}
	forms := make([]string, 0, len(set))
	for e := range set {
		forms = append(forms, e)
	}
	// Longest first: at one position the replacer tries the arguments in
	// order, so a longer encoding wins over a shorter one it contains.
	sort.Slice(forms, func(i, j int) bool {
		if len(forms[i]) != len(forms[j]) {
			return len(forms[i]) > len(forms[j])
		}
		return forms[i] < forms[j]
	})
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	return &Masker{r: strings.NewReplacer(pairs...)}
}

// Mask replaces every encoding of the masker's secrets in s.
func (m *Masker) Mask(s string) string {
	if m == nil || m.r == nil || s == "" {
		return s
	}
	return m.r.Replace(s)
}

// Secrets masks every encoding of secrets in s (New(secrets...).Mask(s)).
func Secrets(s string, secrets ...string) string { return New(secrets...).Mask(s) }

// Encodings lists the forms secret may take in a message.
func Encodings(secret string) []string {
	q := url.QueryEscape(secret)
	out := []string{
		secret,
		q, lowerEscapes(q),
		strings.ReplaceAll(q, "+", "%20"), // encodeURIComponent
		url.PathEscape(secret), lowerEscapes(url.PathEscape(secret)),
		url.QueryEscape(q), // a URL inside a URL (?next=…)
		html.EscapeString(secret),
		strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&quot;", `'`, "&#x27;").Replace(secret),
		hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret))),
	}
	out = append(out, jsonForms(secret)...)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(secret)))
		raw := enc.WithPadding(base64.NoPadding)
		for k := 0; k < 3; k++ {
			if f := fragment(raw, secret, k); len(f) >= minFragment || (k == 0 && f != "") {
				out = append(out, f)
			}
		}
	}
	return out
}

// fragment is the part of the base64 of secret, placed k bytes into a larger
// value, that depends on the secret's bytes only.
func fragment(enc *base64.Encoding, secret string, k int) string {
	s := enc.EncodeToString(append(make([]byte, k), secret...))
	first, last := (8*k+5)/6, (8*(k+len(secret)))/6
	if first >= last {
		return ""
	}
	return s[first:last]
}

// jsonForms are secret JSON-escaped with and without HTML escaping, and with
// every non-ASCII character as \uXXXX.
func jsonForms(secret string) []string {
	j, _ := json.Marshal(secret)
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(secret)
	plain := strings.TrimSpace(sb.String())
	var ascii strings.Builder
	for _, r := range plain {
		switch {
		case r < utf8.RuneSelf:
			ascii.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := surrogates(r)
			ascii.WriteString(uEscape(r1) + uEscape(r2))
		default:
			ascii.WriteString(uEscape(r))
		}
	}
	a := ascii.String()
	return []string{string(j[1 : len(j)-1]), plain[1 : len(plain)-1], a[1 : len(a)-1]}
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

func uEscape(r rune) string {
	const digits = "0123456789abcdef"
	return `\u` + string([]byte{digits[r>>12&0xF], digits[r>>8&0xF], digits[r>>4&0xF], digits[r&0xF]})
}

// lowerEscapes writes the hex digits of %XX escapes in lower case.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// urlRe matches a URL in free text: up to the first space, quote or angle bracket.
var urlRe = regexp.MustCompile(`(?i)\b(?:https?|wss?|file|ftp)://[^\s"'<>]+`)

// URLs drops the query string and fragment of every URL in s ("?…" stays
// to say there was one).
func URLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlRe.ReplaceAllStringFunc(s, URL)
}

// URL is u without its query string and fragment (and user info): the part
// that names the page, never what a form put in it.
func URL(u string) string {
	cut := strings.IndexAny(u, "?#")
	if cut < 0 {
		cut = len(u)
	}
	head := u[:cut]
	if scheme := strings.Index(head, "://"); scheme >= 0 {
		auth := head[scheme+3:]
		if slash := strings.IndexByte(auth, '/'); slash >= 0 {
			auth = auth[:slash]
		}
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			head = head[:scheme+3] + head[scheme+3+at+1:]
		}
	}
	if cut < len(u) {
		return head + "?…"
	}
	return head
}
