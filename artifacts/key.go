package artifacts

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxKeyBytes is S3's limit on an object key.
const maxKeyBytes = 1024

// Key joins parts with "/" into an object key that cannot escape its prefix:
// each part is split on "/" (and "\"), and empty, "." and ".." segments are
// dropped; control characters and invalid UTF-8 become "_". So
// Key("batches", id, "../x", "shot.png") is "batches/<id>/x/shot.png".
// The result is "" only when no usable segment is left; Put rejects "".
func Key(parts ...string) string {
	segs := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.ReplaceAll(p, `\`, "/")
		for _, s := range strings.Split(p, "/") {
			s = strings.Map(func(r rune) rune {
				if r == utf8.RuneError || unicode.IsControl(r) {
					return '_'
				}
				return r
			}, s)
			if s == "" || s == "." || s == ".." {
				continue
			}
			segs = append(segs, s)
		}
	}
	return strings.Join(segs, "/")
}

// checkKey rejects keys that Key would not produce, so a key built by hand
// cannot write outside its prefix or collide after normalisation.
func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > maxKeyBytes:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKey, len(key), maxKeyBytes)
	case key != Key(key):
		return fmt.Errorf("%w: %q (use artifacts.Key to build keys)", ErrInvalidKey, key)
	}
	return nil
}
