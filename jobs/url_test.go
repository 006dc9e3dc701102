package jobs

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "https", in: "https://example.com/a?b=1", want: "https://example.com/a?b=1"},
		{name: "http with port", in: "http://127.0.0.1:8080/", want: "http://127.0.0.1:8080/"},
		{name: "scheme and host lowercased, fragment dropped", in: "HTTPS://Example.COM/Path#frag", want: "https://example.com/Path"},
		{name: "empty", in: "", wantErr: "required"},
		{name: "relative", in: "/docs", wantErr: "absolute"},
		{name: "no scheme", in: "example.com", wantErr: "absolute"},
		{name: "file", in: "file:///etc/passwd", wantErr: `scheme "file"`},
		{name: "javascript", in: "javascript:alert(1)", wantErr: `scheme "javascript"`},
		{name: "ftp", in: "ftp://example.com/", wantErr: `scheme "ftp"`},
		{name: "data", in: "data:text/html,hi", wantErr: `scheme "data"`},
		{name: "userinfo", in: "https://user:pw@example.com/", wantErr: "user information"},
		{name: "user only", in: "https://user@example.com/", wantErr: "user information"},
		{name: "no host", in: "http:///path", wantErr: "host"},
		{name: "port zero", in: "http://example.com:0/", wantErr: "out of range"},
		{name: "port too big", in: "http://example.com:70000/", wantErr: "out of range"},
		{name: "spaces", in: " https://example.com/", wantErr: "spaces"},
		{name: "too long", in: "https://example.com/" + strings.Repeat("a", 2100), wantErr: "limit is 2048"},
		{name: "bad escape", in: "https://example.com/%zz", wantErr: "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := NormalizeURL(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NormalizeURL(%q) error = %v, want it to mention %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NormalizeURL(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("NormalizeURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCheckBrowserURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url, code string
	}{
		{"http://127.0.0.3:1/", "unsafe_port"},
		{"http://example.com:25/", "unsafe_port"},
		{"https://example.com:6667/x", "unsafe_port"},
		{"http://example.com:10080/", "unsafe_port"},
		{"http://example.com:6670/", ""},
		{"http://example.com/", ""},
		{"https://example.com:443/", ""},
		{"http://127.0.0.1:8080/", ""},
		{"ftp://example.com/", "invalid_url"},
	} {
		_, code, err := CheckBrowserURL(tt.url)
		if code != tt.code || (err != nil) != (tt.code != "") {
			t.Errorf("CheckBrowserURL(%q) = %q, %v; want code %q", tt.url, code, err, tt.code)
		}
	}
}

func TestParseBatchRequestRejectsUnsafePortNamingTheField(t *testing.T) {
	t.Parallel()
	_, _, err := ParseBatchRequest([]byte(`{"urls": ["http://127.0.0.1:8080/"], "targets": [{"url": "http://127.0.0.3:1/"}]}`), 0)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Code != "unsafe_port" || ve.Fields[0].Field != "targets[0].url" {
		t.Fatalf("ParseBatchRequest = %v, want one unsafe_port error on targets[0].url", err)
	}
}
