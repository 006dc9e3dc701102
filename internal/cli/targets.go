package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/snapq/snapq/client"
)

// readTargets reads a file of targets: one URL per line, or "name<TAB>url";
// blank lines and lines starting with # are skipped.
func readTargets(r io.Reader, source string) ([]client.Target, error) {
	var out []client.Target
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t := client.Target{URL: line}
		if name, u, ok := strings.Cut(line, "\t"); ok {
			t = client.Target{Name: strings.TrimSpace(name), URL: strings.TrimSpace(u)}
		}
		if t.URL == "" || strings.ContainsAny(t.URL, " \t") {
			return nil, fmt.Errorf("%s:%d: want a URL or name<TAB>url, got %q", source, n, line)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	return out, nil
}

// setOption sets a dotted key ("viewport.width") of the options object to
// value. The value is JSON when it parses as JSON (numbers, true, false,
// null, [..], {..}, "..."), a string otherwise: --set wait.until=load.
func setOption(opts map[string]any, assignment string) error {
	key, raw, ok := strings.Cut(assignment, "=")
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want key=value, e.g. viewport.width=1440", assignment)
	}
	var value any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&value); err != nil || dec.More() || raw == "" {
		value = raw
	}
	parts := strings.Split(key, ".")
	m := opts
	for i, p := range parts[:len(parts)-1] {
		if p == "" {
			return fmt.Errorf("--set %q: empty key part", assignment)
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			if _, exists := m[p]; exists {
				return fmt.Errorf("--set %q: %s is not an object", assignment, strings.Join(parts[:i+1], "."))
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = value
	return nil
}

// checkOptions decodes the options into client.Options, which knows every
// option the api has: a misspelt key or a value of the wrong type is caught
// before anything is submitted. The api still validates ranges.
func checkOptions(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var o client.Options
	if err := dec.Decode(&o); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	return nil
}
