package egress

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestValidateListen(t *testing.T) {
	tests := []struct {
		name, listen, advertise, wantErr string
	}{
		{name: "default", listen: ""},
		{name: "loopback", listen: "127.0.0.1:0"},
		{name: "every interface with an advertised name", listen: "0.0.0.0:0", advertise: "worker-0.snapq-workers"},
		{name: "every interface with an advertised ip", listen: "[::]:0", advertise: "[fd00::7]"},
		{name: "every interface without an advertised host", listen: "0.0.0.0:0", wantErr: "SNAPQ_EGRESS_PROXY_ADVERTISE"},
		{name: "fixed port", listen: "127.0.0.1:8080", wantErr: "the port must be 0"},
		{name: "name", listen: "localhost:0", wantErr: "must be an IP address"},
		{name: "no port", listen: "127.0.0.1", wantErr: "want ip:0"},
		{name: "advertised host with a port", listen: "10.0.0.5:0", advertise: "10.0.0.5:3128", wantErr: "without a port"},
		{name: "advertised url", listen: "10.0.0.5:0", advertise: "http://w", wantErr: "without a port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Config{Listen: tt.listen, Advertise: tt.advertise}.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// A session listening on another address and advertising a host serves there, and its
// URL names the advertised host with the listener's port.
func TestSessionListenAdvertise(t *testing.T) {
	p := New(Config{Listen: "127.0.0.3:0", Advertise: "127.0.0.3"})
	s, err := p.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.3" || u.Port() == "0" || u.Port() == "" {
		t.Fatalf("URL = %s, want http://127.0.0.3:<port>", s.URL())
	}
	// The guard answers there: loopback is refused with its own 403.
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	res, err := client.Get("http://127.0.0.1:1/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Snapq-Egress") != KindBlocked {
		t.Fatalf("status %d, X-Snapq-Egress %q; want 403 blocked", res.StatusCode, res.Header.Get("X-Snapq-Egress"))
	}
	if k, _ := s.Outcome("127.0.0.1"); k != KindBlocked {
		t.Fatalf("Outcome = %q, want blocked", k)
	}
}
