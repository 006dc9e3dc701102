// Package env reads snapq's configuration from SNAPQ_* environment
// variables by one rule: SNAPQ_ + the setting's name in upper snake case.
// Bad values are collected so a binary reports all of them at once.
package env

import (
	"errors"
	"fmt"
	"os"
	"strconv"
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
