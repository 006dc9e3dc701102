package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// deniedRange is one address range the default policy refuses, with the name used in
// refusal reasons.
type deniedRange struct {
	prefix netip.Prefix
	reason string
}

// deniedRanges is checked in order, so a narrow range listed before a wider one names the
// address (::1 is "loopback", not "IPv4-compatible"). Every entry is refused unless the
// operator allow-lists it; the set is deliberately wider than net/netip's IsPrivate and
// IsGlobalUnicast notions (CGNAT, benchmarking, 240/4, NAT64 and the IPv6 transition
// prefixes all embed or reach addresses that may be internal).
var deniedRanges = []deniedRange{
	// IPv4. Addresses arrive here already unmapped from ::ffff:a.b.c.d.
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified"},
	{netip.MustParsePrefix("255.255.255.255/32"), "limited broadcast"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("0.0.0.0/8"), "this network (0.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT, RFC 6598)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3)"},

	// IPv6.
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6 (deprecated)"},
	// ::ffff:0:a.b.c.d (SIIT, RFC 2765) is not touched by Unmap; rarely on SSRF deny
	// lists, refused because it only exists to carry an IPv4 address.
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated IPv6 (SIIT)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 (64:ff9b::/96)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"},
	// 100::/64 is the discard-only block; rarely on SSRF deny lists, refused as never useful.
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64)"},
	{netip.MustParsePrefix("2001::/32"), "Teredo (2001::/32)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	{netip.MustParsePrefix("2002::/16"), "6to4 (2002::/16)"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// Policy decides which destination addresses the browser may reach. The zero value and a
// nil *Policy deny every non-public range; NewPolicy adds operator allow-list entries,
// which win over the deny list. A Policy is immutable and safe for concurrent use.
type Policy struct {
	allow []netip.Prefix
}

// NewPolicy returns a policy that refuses the non-public ranges listed in this package
// except addresses inside allow. Allow prefixes written in IPv4-mapped IPv6 form
// (::ffff:10.0.0.0/104) are converted to IPv4 so that they match unmapped addresses.
func NewPolicy(allow []netip.Prefix) *Policy {
	p := &Policy{}
	for _, pfx := range allow {
		if !pfx.IsValid() {
			continue
		}
		a := pfx.Addr().WithZone("")
		bits := pfx.Bits()
		if a.Is4In6() && bits >= 96 {
			a, bits = a.Unmap(), bits-96
		}
		p.allow = append(p.allow, netip.PrefixFrom(a, bits).Masked())
	}
	return p
}

// Allowed reports whether ip may be dialed, with a short reason naming the matched range
// ("loopback", "private (RFC 1918)", "allow-listed (127.0.0.2/32)", "public").
// IPv4-mapped IPv6 addresses are unmapped and zones stripped before any check, so
// ::ffff:127.0.0.1 is loopback. The invalid zero Addr is refused.
func (p *Policy) Allowed(ip netip.Addr) (ok bool, reason string) {
	if !ip.IsValid() {
		return false, "invalid address"
	}
	ip = ip.Unmap().WithZone("")
	if p != nil {
		for _, pfx := range p.allow {
			if pfx.Contains(ip) {
				return true, "allow-listed (" + pfx.String() + ")"
			}
		}
	}
	for _, d := range deniedRanges {
		if d.prefix.Contains(ip) {
			return false, d.reason
		}
	}
	return true, "public"
}

// AllowList returns a copy of the operator allow-list (normalized).
func (p *Policy) AllowList() []netip.Prefix {
	if p == nil {
		return nil
	}
	return append([]netip.Prefix(nil), p.allow...)
}

// ParseCIDRs parses a comma-separated list of CIDR prefixes, the format of
// SNAPQ_EGRESS_ALLOW_CIDRS ("10.1.0.0/16, 192.168.5.7/32, fd00:1::/64"). Spaces around
// entries and empty entries are ignored; a bare address is taken as a single-host prefix
// (/32 or /128). Host bits are cleared (10.1.2.3/16 means 10.1.0.0/16). The error names the
// first bad entry and its position.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if !strings.Contains(entry, "/") {
			a, err := netip.ParseAddr(entry)
			if err != nil {
				return nil, fmt.Errorf("egress: allow-list entry %d %q is neither a CIDR prefix nor an IP address: %w", i+1, entry, err)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("egress: allow-list entry %d %q: zones are not allowed", i+1, entry)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pfx, err := netip.ParsePrefix(entry)
		if err != nil {
			return nil, fmt.Errorf("egress: allow-list entry %d %q is not a CIDR prefix: %w", i+1, entry, err)
		}
		out = append(out, pfx.Masked())
	}
	return out, nil
}
