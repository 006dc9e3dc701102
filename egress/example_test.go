package egress_test

import (
	"fmt"
	"log"
	"os"

	"github.com/snapq/snapq/egress"
)

// A worker builds one Proxy and gives each Chromium browser context its own Session.
// The flags are what Chromium needs so that every request, loopback included, goes
// through the proxy and WebRTC cannot send UDP around it.
func ExampleProxy_NewSession() {
	allow, err := egress.ParseCIDRs(os.Getenv("SNAPQ_EGRESS_ALLOW_CIDRS"))
	if err != nil {
		log.Fatal(err)
	}
	proxy := egress.New(egress.Config{Policy: egress.NewPolicy(allow)})

	sess, err := proxy.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	// Browser-wide flags, set once at launch:
	//   --proxy-bypass-list=<-loopback>
	//   --webrtc-ip-handling-policy=disable_non_proxied_udp
	//   --force-webrtc-ip-handling-policy=disable_non_proxied_udp
	// Per job: Target.createBrowserContext{proxyServer: sess.URL(), proxyBypassList: "<-loopback>"}.
	fmt.Println("proxy for this job's browser context:", sess.URL())

	// After a failed navigation to https://intranet.example/:
	if ev, ok := sess.Lookup("intranet.example"); ok && ev.Kind == egress.KindBlocked {
		fmt.Println("blocked destination:", ev.Reason)
	}
}
