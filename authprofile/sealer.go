package authprofile

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Sealer encrypts secrets and storage states at rest with AES-256-GCM. New
// writes use the current key; the old keys still open what they sealed, so a
// key is rotated by making it old (SNAPQ_SECRET_KEYS_OLD) and setting a new
// current one (SNAPQ_SECRET_KEY). Every sealed value names its key by an id
// (the first 4 bytes of the key's SHA-256), so opening never guesses.
//
// A sealed value is: 1 byte format version (1), 4 bytes key id, 12 bytes
// nonce, then the GCM ciphertext and tag. The additional data binds a value
// to what it is for (a profile's id and field), so a ciphertext copied into
// another row does not open.
type Sealer struct {
	current keyEntry
	byID    map[[4]byte]cipher.AEAD
}

type keyEntry struct {
	id   [4]byte
	aead cipher.AEAD
}

// ErrNoKey: the sealer has no key the value names (a key was dropped from
// SNAPQ_SECRET_KEYS_OLD too early), or the value is not a sealed value.
var ErrNoKey = errors.New("no secret key opens this value")

const sealVersion = 1

// ParseKey decodes a 32-byte key given as base64 (standard or URL alphabet,
// padded or not) or as 64 hex digits.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("the key is %d bytes; it must be 32 (generate one with: openssl rand -base64 32)", len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("the key must be 32 bytes as base64 or 64 hex digits (generate one with: openssl rand -base64 32)")
}

// NewSealer seals with current and opens with current and every old key.
func NewSealer(current []byte, old ...[]byte) (*Sealer, error) {
	s := &Sealer{byID: map[[4]byte]cipher.AEAD{}}
	for i, k := range append([][]byte{current}, old...) {
		e, err := newKeyEntry(k)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			s.current = e
		}
		if _, dup := s.byID[e.id]; !dup {
			s.byID[e.id] = e.aead
		}
	}
	return s, nil
}

func newKeyEntry(k []byte) (keyEntry, error) {
	if len(k) != 32 {
		return keyEntry{}, fmt.Errorf("a secret key must be 32 bytes, not %d", len(k))
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return keyEntry{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return keyEntry{}, err
	}
	sum := sha256.Sum256(k)
	var id [4]byte
	copy(id[:], sum[:4])
	return keyEntry{id: id, aead: aead}, nil
}

// KeyID is the hex id of the current key, as logged at start-up (it says
// which key is in use without saying anything of it).
func (s *Sealer) KeyID() string { return hex.EncodeToString(s.current.id[:]) }

// Seal encrypts plain under the current key, bound to aad.
func (s *Sealer) Seal(plain []byte, aad string) ([]byte, error) {
	nonce := make([]byte, s.current.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	out := make([]byte, 0, 1+4+len(nonce)+len(plain)+s.current.aead.Overhead())
	out = append(out, sealVersion)
	out = append(out, s.current.id[:]...)
	out = append(out, nonce...)
	return s.current.aead.Seal(out, nonce, plain, []byte(aad)), nil
}

// Open decrypts a value Seal made under any known key with the same aad.
func (s *Sealer) Open(sealed []byte, aad string) ([]byte, error) {
	if len(sealed) < 1+4+12 || sealed[0] != sealVersion {
		return nil, ErrNoKey
	}
	var id [4]byte
	copy(id[:], sealed[1:5])
	aead, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w (key id %x)", ErrNoKey, id)
	}
	nonce := sealed[5 : 5+aead.NonceSize()]
	plain, err := aead.Open(nil, nonce, sealed[5+aead.NonceSize():], []byte(aad))
	if err != nil {
		return nil, fmt.Errorf("open sealed value (key id %x): %w", id, err)
	}
	return plain, nil
}

// SealedWithCurrent reports whether sealed names the current key (a value
// sealed under an old key is sealed again on its next write).
func (s *Sealer) SealedWithCurrent(sealed []byte) bool {
	return len(sealed) >= 5 && [4]byte(sealed[1:5]) == s.current.id
}

// SecretsAAD and StateAAD are the additional data a profile's sealed secrets
// and sealed logins are bound to (the store re-seals them on key rotation).
func SecretsAAD(profileID string) string { return secretsAAD(profileID) }

// StateAAD: see SecretsAAD.
func StateAAD(profileID string) string { return stateAAD(profileID) }
