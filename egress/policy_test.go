package egress

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// These tests only evaluate addresses; nothing is dialed.

func TestPolicyAllowedDefault(t *testing.T) {
	t.Parallel()
	p := NewPolicy(nil)
	tests := []struct {
		name   string
		ip     string
		ok     bool
		reason string // exact reason
	}{
		{"loopback v4", "127.0.0.1", false, "loopback"},
		{"loopback v4 end", "127.255.255.254", false, "loopback"},
		{"loopback v6", "::1", false, "loopback"},
		{"mapped loopback", "::ffff:127.0.0.1", false, "loopback"},
		{"mapped loopback hex", "::ffff:7f00:1", false, "loopback"},
		{"rfc1918 10/8", "10.0.0.1", false, "private (RFC 1918)"},
		{"mapped rfc1918", "::ffff:10.0.0.1", false, "private (RFC 1918)"},
		{"rfc1918 172.16/12 start", "172.16.0.1", false, "private (RFC 1918)"},
		{"rfc1918 172.16/12 end", "172.31.255.255", false, "private (RFC 1918)"},
		{"just outside 172.16/12", "172.32.0.1", true, "public"},
		{"rfc1918 192.168/16", "192.168.1.1", false, "private (RFC 1918)"},
		{"link-local v4 (metadata)", "169.254.169.254", false, "link-local"},
		{"mapped metadata", "::ffff:169.254.169.254", false, "link-local"},
		{"link-local v6", "fe80::1", false, "link-local"},
		{"link-local v6 with zone", "fe80::1%eth0", false, "link-local"},
		{"unique-local fc", "fc00::1", false, "unique-local"},
		{"unique-local fd", "fd12:3456::1", false, "unique-local"},
		{"unspecified v4", "0.0.0.0", false, "unspecified"},
		{"unspecified v6", "::", false, "unspecified"},
		{"this network 0/8", "0.1.2.3", false, "this network (0.0.0.0/8)"},
		{"cgnat start", "100.64.0.1", false, "shared address space (CGNAT, RFC 6598)"},
		{"cgnat end", "100.127.255.255", false, "shared address space (CGNAT, RFC 6598)"},
		{"just outside cgnat", "100.128.0.1", true, "public"},
		{"benchmarking", "198.18.0.1", false, "benchmarking (RFC 2544)"},
		{"benchmarking end", "198.19.255.255", false, "benchmarking (RFC 2544)"},
		{"reserved 240/4", "240.0.0.1", false, "reserved (240.0.0.0/4)"},
		{"reserved 240/4 end", "255.255.255.254", false, "reserved (240.0.0.0/4)"},
		{"limited broadcast", "255.255.255.255", false, "limited broadcast"},
		{"multicast v4", "224.0.0.1", false, "multicast"},
		{"multicast v4 end", "239.255.255.255", false, "multicast"},
		{"multicast v6", "ff02::1", false, "multicast"},
		{"site-local", "fec0::1", false, "site-local (deprecated)"},
		{"ipv4-compatible", "::7f00:1", false, "IPv4-compatible IPv6 (deprecated)"},
		{"ipv4-compatible public", "::808:808", false, "IPv4-compatible IPv6 (deprecated)"},
		{"ipv4-translated", "::ffff:0:7f00:1", false, "IPv4-translated IPv6 (SIIT)"},
		{"6to4", "2002:7f00:1::", false, "6to4 (2002::/16)"},
		{"teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2", false, "Teredo (2001::/32)"},
		{"nat64", "64:ff9b::7f00:1", false, "NAT64 (64:ff9b::/96)"},
		{"local-use nat64", "64:ff9b:1::a00:1", false, "local-use NAT64 (64:ff9b:1::/48)"},
		{"discard-only", "100::1", false, "discard-only (100::/64)"},
		{"ietf protocol assignments", "192.0.0.8", false, "IETF protocol assignments (192.0.0.0/24)"},
		{"test-net-1", "192.0.2.1", false, "documentation (TEST-NET-1)"},
		{"test-net-2", "198.51.100.1", false, "documentation (TEST-NET-2)"},
		{"test-net-3", "203.0.113.1", false, "documentation (TEST-NET-3)"},
		{"documentation v6", "2001:db8::1", false, "documentation (2001:db8::/32)"},
		{"public v4", "8.8.8.8", true, "public"},
		{"public v4 2", "93.184.215.14", true, "public"},
		{"mapped public v4", "::ffff:1.1.1.1", true, "public"},
		{"public v6", "2606:4700:4700::1111", true, "public"},
		{"public v6 near teredo", "2001:4860:4860::8888", true, "public"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, reason := p.Allowed(netip.MustParseAddr(tt.ip))
			if ok != tt.ok || reason != tt.reason {
				t.Errorf("Allowed(%s) = %v, %q; want %v, %q", tt.ip, ok, reason, tt.ok, tt.reason)
			}
		})
	}
}

// TestPolicyDeniesEveryRange checks both ends of every deny-list entry, so a range can
// not be added to the table and silently not enforced.
func TestPolicyDeniesEveryRange(t *testing.T) {
	t.Parallel()
	p := NewPolicy(nil)
	for _, d := range deniedRanges {
		first := d.prefix.Masked().Addr()
		last := lastAddr(d.prefix)
		for _, a := range []netip.Addr{first, last} {
			if ok, reason := p.Allowed(a); ok {
				t.Errorf("%s (in %s, %s) allowed: %s", a, d.prefix, d.reason, reason)
			}
			if a.Is4() {
				mapped := netip.AddrFrom16(a.As16())
				if ok, _ := p.Allowed(mapped); ok {
					t.Errorf("mapped %s allowed", mapped)
				}
			}
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestPolicyAllowList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		allow []string
		ip    string
		ok    bool
	}{
		{"exact host allowed", []string{"127.0.0.2/32"}, "127.0.0.2", true},
		{"mapped form of allowed host", []string{"127.0.0.2/32"}, "::ffff:127.0.0.2", true},
		{"neighbour still loopback", []string{"127.0.0.2/32"}, "127.0.0.1", false},
		{"neighbour above", []string{"127.0.0.2/32"}, "127.0.0.3", false},
		{"v4 allow does not open ::1", []string{"127.0.0.2/32"}, "::1", false},
		{"private subnet", []string{"10.20.0.0/16"}, "10.20.3.4", true},
		{"outside private subnet", []string{"10.20.0.0/16"}, "10.21.0.1", false},
		{"mapped allow prefix", []string{"::ffff:10.0.0.0/104"}, "10.1.2.3", true},
		{"ula subnet", []string{"fd00:1::/32"}, "fd00:1::5", true},
		{"other ula", []string{"fd00:1::/32"}, "fd00:2::5", false},
		{"unmasked prefix masked", []string{"192.168.5.77/24"}, "192.168.5.1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var allow []netip.Prefix
			for _, s := range tt.allow {
				allow = append(allow, netip.MustParsePrefix(s))
			}
			ok, reason := NewPolicy(allow).Allowed(netip.MustParseAddr(tt.ip))
			if ok != tt.ok {
				t.Errorf("Allowed(%s) with allow %v = %v (%s); want %v", tt.ip, tt.allow, ok, reason, tt.ok)
			}
			if ok && !strings.HasPrefix(reason, "allow-listed (") {
				t.Errorf("reason = %q, want allow-listed (…)", reason)
			}
		})
	}
}

func TestPolicyNilAndInvalid(t *testing.T) {
	t.Parallel()
	var p *Policy
	if ok, reason := p.Allowed(netip.MustParseAddr("10.0.0.1")); ok || reason != "private (RFC 1918)" {
		t.Errorf("nil policy: %v %q", ok, reason)
	}
	if ok, reason := p.Allowed(netip.Addr{}); ok || reason != "invalid address" {
		t.Errorf("zero Addr: %v %q", ok, reason)
	}
}

func TestParseCIDRs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string // substring; "" = no error
	}{
		{name: "empty", in: "", want: nil},
		{name: "spaces and empty entries", in: " 10.1.0.0/16 , ,192.168.5.7/32,", want: []string{"10.1.0.0/16", "192.168.5.7/32"}},
		{name: "ipv6", in: "fd00:1::/64", want: []string{"fd00:1::/64"}},
		{name: "bare addresses", in: "127.0.0.2, ::1", want: []string{"127.0.0.2/32", "::1/128"}},
		{name: "host bits cleared", in: "10.1.2.3/16", want: []string{"10.1.0.0/16"}},
		{name: "bad prefix named", in: "10.0.0.0/8, 10.0.0.0/33", wantErr: `entry 2 "10.0.0.0/33"`},
		{name: "bad address named", in: "localhost", wantErr: `entry 1 "localhost"`},
		{name: "octal-looking rejected", in: "0177.0.0.1/32", wantErr: `"0177.0.0.1/32"`},
		{name: "zone rejected", in: "fe80::1%eth0", wantErr: "zones are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCIDRs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCIDRs(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCIDRs(%q): %v", tt.in, err)
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if !reflect.DeepEqual(gotS, tt.want) {
				t.Errorf("ParseCIDRs(%q) = %v, want %v", tt.in, gotS, tt.want)
			}
		})
	}
}
