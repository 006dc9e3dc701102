// Package env reads snapq's configuration from SNAPQ_* environment
// variables by one rule: SNAPQ_ + the setting's name in upper snake case.
// A credential (Reader.Secret) may instead be read from a file named by the
// same variable with _FILE appended. Bad values are collected so a binary
// reports all of them at once.
package env

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Reader reads variables and remembers every bad one.
type Reader struct {
	errs []error
}

// String returns the variable or def when unset or empty.
func (r *Reader) String(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// FileSuffix turns a credential's variable name into the name of the variable
// that holds the path of a file with its value: SNAPQ_SECRET_KEY_FILE.
const FileSuffix = "_FILE"

// maxSecretFile bounds what is read of a credential's file.
const maxSecretFile = 64 << 10

// Secret returns a credential: the variable when it is set and not empty,
// else the contents of the file its _FILE variable names (one trailing
// newline removed), else def. Both set is an error, so is an unreadable,
// empty or oversized file; no error repeats the value.
func (r *Reader) Secret(name, def string) string {
	v := r.String(name, "")
	path := r.String(name+FileSuffix, "")
	switch {
	case path == "" && v == "":
		return def
	case path == "":
		return v
	case v != "":
		r.errs = append(r.errs, fmt.Errorf("%s and %s%s are both set: set one", name, name, FileSuffix))
		return def
	}
	b, err := readSecretFile(path)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s%s=%s: %w", name, FileSuffix, path, err))
		return def
	}
	return b
}

// readSecretFile reads a credential's file: at most maxSecretFile bytes, not
// empty once a trailing newline (\n or \r\n) is removed.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("larger than %d KiB", maxSecretFile>>10)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", errors.New("the file is empty")
	}
	return s, nil
}

// Int returns the variable as an int.
func (r *Reader) Int(name string, def int) int {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: want a whole number", name, v))
		return def
	}
	return n
}

// Float returns the variable as a float64.
func (r *Reader) Float(name string, def float64) float64 {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: want a number", name, v))
		return def
	}
	return f
}

// Bool returns the variable as a bool (true/false/1/0).
func (r *Reader) Bool(name string, def bool) bool {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: want true or false", name, v))
		return def
	}
	return b
}

// Duration returns the variable as a Go duration ("90s", "15m").
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v := r.String(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: want a duration such as 30s or 15m", name, v))
		return def
	}
	return d
}

// Err returns every bad variable seen, or nil.
func (r *Reader) Err() error { return errors.Join(r.errs...) }
