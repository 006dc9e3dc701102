// Package testenv gives integration tests their real services (Postgres,
// Redis, MinIO, Chromium) and isolates each test: a Postgres schema and a
// Redis database of its own. A missing service fails the test under CI=true
// and skips it elsewhere, with the command that starts it.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

// Unavailable fails (CI=true) or skips the test because a service is missing.
func Unavailable(t testing.TB, service string, err error) {
	t.Helper()
	msg := service + " is not reachable (" + err.Error() + "); start the stack with `scripts/services.sh up` or run `make test`"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Getenv returns the variable or def.
func Getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// RandomSuffix returns n random hex bytes.
func RandomSuffix(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// DatabaseURL creates a fresh schema in the test database and returns a URL
// whose search_path points at it; the schema is dropped after the test.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	base := TestDatabase()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, drop, err := NewSchema(ctx, base)
	if err != nil {
		Unavailable(t, "postgres", err)
	}
	t.Cleanup(drop)
	return u
}

// TestDatabase is the database the tests make their schemas in:
// SNAPQ_TEST_DATABASE_URL, or snapq_test on the local Postgres.
func TestDatabase() string {
	return Getenv("SNAPQ_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/snapq_test?sslmode=disable")
}
