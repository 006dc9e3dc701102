package jobs

import "testing"

func TestSanitizeName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: "home_page-1.v2", want: "home_page-1.v2"},
		{name: "spaces and slashes", in: "my page/about us", want: "my-page-about-us"},
		{name: "unicode collapses", in: "café ☕ menü", want: "caf-men"},
		{name: "path traversal", in: "../../etc/passwd", want: "etc-passwd"},
		{name: "double dots inside", in: "a..b", want: "a.b"},
		{name: "hidden file", in: ".env", want: "env"},
		{name: "only junk", in: "☕☕/", want: ""},
		{name: "empty", in: "", want: ""},
		{name: "nul and controls", in: "a\x00b\nc", want: "a-b-c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := SanitizeName(tt.in); got != tt.want {
				t.Errorf("SanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSanitizeNameLength(t *testing.T) {
	t.Parallel()
	long := ""
	for range 300 {
		long += "a"
	}
	if got := SanitizeName(long); len(got) != 100 {
		t.Errorf("len = %d, want 100", len(got))
	}
}

func TestNameFromURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{name: "host only", in: "https://example.com/", want: "example.com"},
		{name: "path", in: "https://example.com/docs/intro?x=1#top", want: "example.com-docs-intro"},
		{name: "port", in: "http://127.0.0.1:8080/a", want: "127.0.0.1_8080-a"},
		{name: "ipv6", in: "http://[::1]:9/x", want: "1_9-x"},
		{name: "encoded path", in: "https://example.com/%E2%98%95/menu", want: "example.com-E2-98-95-menu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := NameFromURL(tt.in); got != tt.want {
				t.Errorf("NameFromURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
