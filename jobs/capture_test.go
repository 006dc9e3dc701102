package jobs

import (
	"errors"
	"testing"
	"time"
)

func TestCaptureTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, output, format string
		wait                       time.Duration
		field                      string // the error's field; "" when accepted
	}{
		{name: "default wait", body: `{"url":"http://127.0.0.1/"}`, wait: DefaultCaptureWait},
		{name: "wait given", body: `{"url":"http://127.0.0.1/","wait_ms":5000}`, wait: 5 * time.Second},
		{name: "wait too long", body: `{"url":"http://127.0.0.1/","wait_ms":120001}`, field: "wait_ms"},
		{name: "wait not a number", body: `{"url":"http://127.0.0.1/","wait_ms":"x"}`, field: "wait_ms"},
		{name: "output added", body: `{"url":"http://127.0.0.1/"}`, output: "markdown", wait: DefaultCaptureWait},
		{name: "output missing", body: `{"url":"http://127.0.0.1/","options":{"outputs":["html"]}}`, output: "markdown", field: "options.outputs"},
		{name: "format clash", body: `{"url":"http://127.0.0.1/","options":{"screenshot":{"format":"png"}}}`, output: "screenshot", format: "jpeg", field: "options.screenshot.format"},
		{name: "not json", body: `[`, field: ""},
	} {
		m, wait, err := captureTarget(CaptureSubmission{Body: []byte(tc.body), Output: tc.output, Format: tc.format})
		var ve *ValidationError
		if tc.field != "" || tc.name == "not json" {
			if !errors.As(err, &ve) || ve.Fields[0].Field != tc.field {
				t.Errorf("%s: err %v, want a field error on %q", tc.name, err, tc.field)
			}
			continue
		}
		if err != nil || wait != tc.wait || m["wait_ms"] != nil {
			t.Errorf("%s: %v, wait %s, target %v", tc.name, err, wait, m)
		}
	}
}

func TestCaptureFieldsRenamed(t *testing.T) {
	t.Parallel()
	_, _, err := ParseBatchRequest([]byte(`{"targets":[{"url":"ftp://x","options":{"timeout_ms":-1}}]}`), 0)
	var ve *ValidationError
	if !errors.As(captureFields(err), &ve) || ve.Fields[0].Field != "url" {
		t.Fatalf("fields %v, want them named as in the capture body", err)
	}
}
