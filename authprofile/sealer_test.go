package authprofile

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"
)

func key(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealerRoundTripAndBinding(t *testing.T) {
	t.Parallel()
	s, err := NewSealer(key(t))
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"password":"hunter2-very-secret"}`)
	sealed, err := s.Seal(plain, "profile-1/secrets")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("sealed value holds the plain text")
	}
	got, err := s.Open(sealed, "profile-1/secrets")
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v; want the plain text", got, err)
	}
	if _, err := s.Open(sealed, "profile-2/secrets"); err == nil {
		t.Error("a value opened under another profile's additional data")
	}
	again, _ := s.Seal(plain, "profile-1/secrets")
	if bytes.Equal(again, sealed) {
		t.Error("two seals of the same value are equal: the nonce is not fresh")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed, "profile-1/secrets"); err == nil {
		t.Error("a tampered value opened")
	}
}

func TestSealerRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := key(t), key(t)
	before, _ := NewSealer(oldKey)
	sealedOld, err := before.Seal([]byte("s3cret"), "a")
	if err != nil {
		t.Fatal(err)
	}
	after, err := NewSealer(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := after.Open(sealedOld, "a"); err != nil || string(got) != "s3cret" {
		t.Fatalf("the old key no longer opens its value: %q, %v", got, err)
	}
	if after.SealedWithCurrent(sealedOld) {
		t.Error("a value of the old key counts as sealed with the current one")
	}
	sealedNew, _ := after.Seal([]byte("s3cret"), "a")
	if !after.SealedWithCurrent(sealedNew) {
		t.Error("a new write is not sealed with the new key")
	}
	if _, err := before.Open(sealedNew, "a"); !errors.Is(err, ErrNoKey) {
		t.Errorf("the old sealer opened a value of the new key, or failed otherwise: %v", err)
	}
	dropped, _ := NewSealer(newKey)
	if _, err := dropped.Open(sealedOld, "a"); !errors.Is(err, ErrNoKey) {
		t.Errorf("Open with the old key dropped = %v, want ErrNoKey", err)
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	k := key(t)
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"base64", base64.StdEncoding.EncodeToString(k), true},
		{"raw url base64", base64.RawURLEncoding.EncodeToString(k), true},
		{"hex", "  " + hexOf(k) + "\n", true},
		{"short", base64.StdEncoding.EncodeToString(k[:16]), false},
		{"garbage", "not a key!", false},
	} {
		got, err := ParseKey(tc.in)
		if tc.ok && (err != nil || !bytes.Equal(got, k)) {
			t.Errorf("%s: ParseKey = %x, %v", tc.name, got, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("%s: ParseKey accepted %q", tc.name, tc.in)
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
