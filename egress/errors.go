package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Outcome kinds, used in Event.Kind, DialError.Kind and the X-Snapq-Egress response header.
const (
	KindAllowed       = "allowed"
	KindBlocked       = "blocked"
	KindDNSFailure    = "dns_failure"
	KindConnectFailed = "connection_failed"
	// KindNoResponse: the connection was made, then reset, closed or left silent before a
	// response head arrived (Event.Reason says which).
	KindNoResponse = "no_response"
	// KindConnectionReset: the connection was made, then reset before a response head
	// arrived.
	KindConnectionReset = "connection_reset"
)

// HeaderOutcome is the response header the proxy sets on responses it generates itself
// (403 and 502; also 400 with value "bad_request"). Responses from a target never carry
// it: the proxy strips it from upstream responses so a page cannot forge an outcome.
const HeaderOutcome = "X-Snapq-Egress"

// Sentinels matched with errors.Is on a *DialError (returned by HTTPClient requests, wrapped
// in *url.Error).
var (
	// ErrBlocked: the destination, or one of the addresses its name resolves to, is refused
	// by the Policy. Not worth retrying.
	ErrBlocked = errors.New("egress: destination blocked by policy")
	// ErrDNSFailure: the name did not resolve (NXDOMAIN, no addresses, resolver error).
	ErrDNSFailure = errors.New("egress: name resolution failed")
	// ErrConnectFailed: every checked address refused, was unreachable or timed out.
	ErrConnectFailed = errors.New("egress: connection to destination failed")
)

// DialError describes why the egress guard did not produce a connection.
type DialError struct {
	Kind   string     // KindBlocked, KindDNSFailure or KindConnectFailed
	Host   string     // host as requested (lower-cased, without brackets)
	Port   string     // port as requested
	IP     netip.Addr // offending or last tried address; invalid for DNS failures
	Reason string     // human-readable cause ("127.0.0.1 is loopback")
	Err    error      // underlying error, if any
}

func (e *DialError) Error() string {
	return fmt.Sprintf("egress: %s %s: %s", e.Kind, net.JoinHostPort(e.Host, e.Port), e.Reason)
}

// Unwrap exposes the kind's sentinel (ErrBlocked, …) and the underlying error.
func (e *DialError) Unwrap() []error {
	var s error
	switch e.Kind {
	case KindBlocked:
		s = ErrBlocked
	case KindDNSFailure:
		s = ErrDNSFailure
	default:
		s = ErrConnectFailed
	}
	if e.Err == nil {
		return []error{s}
	}
	return []error{s, e.Err}
}
