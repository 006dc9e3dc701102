package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// validateListen checks Config.Listen and Config.Advertise: Listen is host:0 with an IP
// host (each session needs a port of its own), and an unspecified Listen host (0.0.0.0,
// [::]) needs an Advertise host, since no browser can dial "0.0.0.0".
func validateListen(listen, advertise string) error {
	if listen == "" {
		listen = DefaultListen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("egress: listen address %q: want ip:0, e.g. 127.0.0.1:0 or 0.0.0.0:0", listen)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("egress: listen address %q: the host must be an IP address", listen)
	}
	if port != "0" {
		return fmt.Errorf("egress: listen address %q: the port must be 0 (each browser context gets a proxy on a port of its own)", listen)
	}
	if advertise != "" {
		if !validHost(strings.Trim(advertise, "[]")) {
			return fmt.Errorf("egress: advertised host %q: want a host name or IP address without a port", advertise)
		}
	} else if ip.IsUnspecified() {
		return fmt.Errorf("egress: listen address %q binds every interface: set the host the browser dials (SNAPQ_EGRESS_PROXY_ADVERTISE)", listen)
	}
	return nil
}

// ProxyURL returns the http://host:port a browser dials for a listener bound at addr:
// advertise (if set) with addr's port, else addr itself.
func ProxyURL(addr net.Addr, advertise string) string {
	if advertise == "" {
		return "http://" + addr.String()
	}
	_, port, _ := net.SplitHostPort(addr.String())
	host := strings.Trim(advertise, "[]")
	return "http://" + net.JoinHostPort(host, port)
}

// validHost accepts an IP address or a DNS name (letters, digits, '-' and '.').
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
