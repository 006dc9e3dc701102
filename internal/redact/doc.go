// Package redact keeps secrets out of messages: one function, Masker.Mask,
// replaces every encoding of every secret a text may carry (raw, URL query-
// and path-escaped, form-encoded, JSON- and HTML-escaped, hex, base64 in both
// alphabets at every alignment), and URLs drops the query strings and
// fragments of the URLs in a message. Every path that turns an auth
// profile's work into text someone can read (action logs, failure messages,
// webhook payloads, log lines) goes through it.
//
// It is a leaf: capture, authprofile and the binaries use it.
package redact
