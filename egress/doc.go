// Package egress is snapq's SSRF guard: the only way a worker's headless Chromium (and
// Go-side deliveries such as webhooks) may reach the network. It imports only the standard
// library.
//
// Why it exists: workers render user-supplied URLs inside the operator's network. Checking
// the URL before navigation is blind to redirects, sub-resources, service-worker fetches
// and WebSockets, and a check that resolves a name and lets Chromium resolve it again is
// beaten by DNS rebinding (Gotenberg GHSA-2pmr-289p-44r3). So the decision is taken where
// the socket is opened: a small HTTP proxy inside the worker resolves each host itself,
// once, refuses the request if any answer is a denied address, and dials exactly the
// address it checked, as Gotenberg's pinning proxy does. Intercepting requests over CDP
// (Fetch) instead sees each URL but not the address Chromium dials, nor WebSockets, WebRTC
// or service-worker traffic.
//
// What it guarantees, for traffic that goes through it:
//
//   - Every CONNECT (https, wss) and every absolute-form http:// request (including ws://
//     upgrades) is checked on its own, also on kept-alive connections; redirects are never
//     followed by the proxy, so each hop comes back and is checked again.
//   - Names are resolved once per request with the injected Resolver; every answer is
//     checked after IPv4-mapped IPv6 is unmapped; a name with any denied answer is refused
//     as a whole; only checked addresses are dialed, and net.Dialer.Control re-checks the
//     address on the socket itself. No second lookup happens anywhere.
//   - IP literals are checked as parsed by net/netip. Anything netip does not parse
//     (2130706433, 0x7f.1, 0177.0.0.1) is treated as a name: the resolver's answer, if
//     any, is checked like any other, so odd spellings fail closed.
//   - The default Policy refuses loopback, RFC 1918, link-local, unique-local, CGNAT,
//     benchmarking, 0/8, 240/4, multicast, documentation ranges and the IPv6 transition
//     prefixes that embed IPv4 (::/96, 6to4, Teredo, NAT64); operator allow-list entries
//     (SNAPQ_EGRESS_ALLOW_CIDRS, ParseCIDRs) win over it.
//   - Outcomes are recorded per Session (one Session per browser context, hence per job):
//     the capture side can ask Session.Lookup(host) why a navigation failed. Responses the
//     proxy makes itself carry X-Snapq-Egress (blocked → 403; dns_failure and
//     connection_failed → 502); targets' own responses never do.
//   - TLS stays end to end: the proxy sees host, port and address, never content.
//
// What it does NOT guarantee; the caller must arrange these:
//
//   - Traffic that does not use the proxy. Chromium bypasses proxies for localhost,
//     127/8, [::1] (and, per Chromium's net/docs/proxy.md, link-local) unless launched with
//     --proxy-bypass-list=<-loopback>. WebRTC/UDP is never proxied: launch with
//     --force-webrtc-ip-handling-policy=disable_non_proxied_udp (and
//     --webrtc-ip-handling-policy=disable_non_proxied_udp). A Chromium bug that skips the
//     proxy is only stopped by network isolation (worker netns whose only route is the
//     proxy; host firewall for 169.254.169.254).
//   - Scheme policy (file:, chrome:, data:) — that is the API's and capture's business.
//   - Port policy: any port on an allowed address may be reached, CONNECT included.
//   - Confidentiality of DNS facts: 403 versus 502 tells whoever sees the response whether
//     a name resolves to a private address. Bodies are generic; reasons stay in events and
//     logs.
//   - Access control on the listener: any local process may use a session's port; it gets
//     exactly the browser's egress rights and no more.
package egress
