package capture

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/launcher/flags"
)

// Defaults for Config. cmd/ maps SNAPQ_CHROME_BIN, SNAPQ_CHROME_URL, … onto the fields.
const (
	DefaultChromeBin           = "/usr/bin/chromium"
	DefaultTabs                = 2
	DefaultBrowserRecycleAfter = 500
	DefaultTabRecycleAfter     = 100
	DefaultCallTimeout         = 30 * time.Second
	// DefaultChromeUser is the account Chromium runs as when the worker is root.
	DefaultChromeUser = "snapq-chrome"
)

// Config configures a Browser.
type Config struct {
	// ChromeBin is the Chromium executable to launch (default /usr/bin/chromium, Debian's
	// chromium package). The package never downloads a browser.
	ChromeBin string
	// RemoteURL, when set, is one or more comma-separated CDP endpoints (ws://…/devtools/
	// browser/… or http://host:port) of running browsers to connect to instead of launching
	// ChromeBin (SNAPQ_CHROME_URL). Each slot gets its own connection, slot i to endpoint
	// i mod n (remote.go). A remote browser is never closed by this package; only the
	// contexts it created are.
	RemoteURL string
	// EgressListen is the address (ip:0) the proxies of the remote egress check bind; it
	// must be the address the Egress sessions bind (SNAPQ_EGRESS_PROXY_LISTEN, default
	// 127.0.0.1:0). Only used with RemoteURL and Egress.
	EgressListen string
	// EgressAdvertise is the host a remote browser dials to reach those proxies
	// (SNAPQ_EGRESS_PROXY_ADVERTISE); default EgressListen's host.
	EgressAdvertise string
	// Tabs is the number of concurrent capture slots (default 2). Each slot owns one long-lived
	// tab in its own browser context.
	Tabs int
	// InteractiveTabs of the Tabs are kept for interactive captures (lane.go; 0 to Tabs-1,
	// default 0). Not applied with RemoteURL.
	InteractiveTabs int
	// BrowserRecycleAfter restarts the browser after this many jobs (default 500): slots are
	// drained, then the browser is closed and launched again.
	BrowserRecycleAfter int
	// TabRecycleAfter replaces a slot's tab and context after this many jobs (default 100).
	TabRecycleAfter int
	// CallTimeout bounds each Page.captureScreenshot call (default 30s), on top of the job's
	// context. A tab whose call timed out is thrown away. It also bounds opening a tab: a
	// browser that cannot open one in time is replaced.
	CallTimeout time.Duration
	// ExtraFlags are added to Chromium's command line ("proxy-server": "http://…"); an empty
	// value gives a boolean flag. Keys may be written with or without the leading "--".
	ExtraFlags map[string]string
	// Egress, when set, gives every browser context its own guarding proxy and launches
	// Chromium so that nothing bypasses it (loopback included, WebRTC UDP off). A top-level
	// navigation the guard refuses fails the job with CodeBlockedAddress; refused
	// sub-resources are counted in Result.BlockedRequests. With RemoteURL the proxies listen
	// on EgressListen of this process (127.0.0.1 by default, so the remote browser must
	// share its network namespace, unless EgressListen/EgressAdvertise make them reachable
	// from it), and it must have been launched with --force-webrtc-ip-handling-policy=
	// disable_non_proxied_udp: no CDP call sets that, so on every connection a throwaway
	// context checks that navigation goes to its proxy and neither it nor WebRTC reaches
	// this process directly, and the connection gets no job otherwise (checkRemoteEgress).
	Egress Egress
	// Filter is the filter-list engine behind Block.Ads, Block.Trackers and
	// Block.ChatWidgets (filter.go), loaded once per worker; nil refuses them.
	Filter Filter
	// Markup converts a page's HTML to the markdown output and decodes text downloads in a
	// charset other than UTF-8 (*markup.Codec from capture/markup, wired in cmd/worker); nil
	// refuses both (markup.go says why it is not built in).
	Markup Markup
	// NoSandbox disables Chromium's own sandbox (SNAPQ_CHROME_NO_SANDBOX): pages then run
	// in renderers with the browser's privileges, which New logs as a warning. Only for
	// hosts and containers that cannot give Chromium a user namespace (launch.go).
	NoSandbox bool
	// ChromeUser is the account Chromium is launched as when this process runs as root
	// (default "snapq-chrome", SNAPQ_CHROME_USER): Chromium refuses to sandbox itself as
	// root. It must exist and not be root; a worker that is not root launches Chromium as
	// itself, and NoSandbox launches it as root without a sandbox.
	ChromeUser string
	// SiteIsolation runs every site in its own renderer process (Chromium's site-per-process,
	// SNAPQ_CHROME_SITE_ISOLATION), so a page's cross-site frames do not share its process.
	SiteIsolation bool
	// Nice is the niceness (0 to 19, default 0) Chromium and every process it starts run
	// at: a batch browser at a higher niceness than the worker and the interactive lane's
	// browser renders with the CPU they leave (nice.go). Linux only; not applied with
	// RemoteURL.
	Nice int
	// Logger receives lifecycle logs (launch, restart, crash). Default: discard.
	Logger *slog.Logger
}

// useDevtoolsPort switches a launcher from the DevTools pipe to a DevTools port on loopback,
// whose URL Chromium prints on stderr: for browsers tests start as "remote" ones, and to
// measure the two transports against each other (pipe.go says why the pipe).
func useDevtoolsPort(l *launcher.Launcher) {
	l.Delete("remote-debugging-pipe")
	l.Set(flags.RemoteDebuggingPort, "0")
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		ChromeBin:           DefaultChromeBin,
		Tabs:                DefaultTabs,
		BrowserRecycleAfter: DefaultBrowserRecycleAfter,
		TabRecycleAfter:     DefaultTabRecycleAfter,
		CallTimeout:         DefaultCallTimeout,
		ChromeUser:          DefaultChromeUser,
	}
}

// withDefaults fills zero values with the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.ChromeBin == "" {
		c.ChromeBin = d.ChromeBin
	}
	if c.Tabs == 0 {
		c.Tabs = d.Tabs
	}
	if c.BrowserRecycleAfter == 0 {
		c.BrowserRecycleAfter = d.BrowserRecycleAfter
	}
	if c.TabRecycleAfter == 0 {
		c.TabRecycleAfter = d.TabRecycleAfter
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = d.CallTimeout
	}
	if c.ChromeUser == "" {
		c.ChromeUser = d.ChromeUser
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// flags Validate refuses in ExtraFlags because the package owns them.
var reservedFlags = map[string]bool{
	string(flags.UserDataDir):         true,
	string(flags.RemoteDebuggingPort): true,
	"remote-debugging-pipe":           true,
	"remote-debugging-address":        true,
	string(flags.Headless):            true,
	string(flags.Leakless):            true,
	string(flags.Bin):                 true,
}

// Validate reports a configuration that cannot work. Zero values count as their defaults.
func (c Config) Validate() error { return c.validate(os.Geteuid()) }

// validate is Validate for a process running with effective uid euid.
func (c Config) validate(euid int) error {
	c = c.withDefaults()
	var errs []error
	if c.RemoteURL != "" {
		eps := remoteEndpoints(c.RemoteURL)
		if len(eps) == 0 {
			errs = append(errs, errors.New("remote browser URL: no endpoint"))
		}
		for _, ep := range eps {
			if err := validateEndpoint(ep); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := probeListen(c); err != nil {
			errs = append(errs, err)
		}
	}
	if c.RemoteURL == "" {
		if err := checkExecutable(c.ChromeBin); err != nil {
			errs = append(errs, fmt.Errorf("chromium not found at %s: install Debian's chromium package (apt-get install chromium) or set SNAPQ_CHROME_BIN (%w)", c.ChromeBin, err))
		}
		if _, err := c.chromeCredential(euid); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Tabs < 1 {
		errs = append(errs, fmt.Errorf("tabs must be at least 1, got %d", c.Tabs))
	} else if err := c.validateLane(); err != nil {
		errs = append(errs, err)
	}
	if c.BrowserRecycleAfter < 1 {
		errs = append(errs, fmt.Errorf("browser recycle-after must be at least 1, got %d", c.BrowserRecycleAfter))
	}
	if c.TabRecycleAfter < 1 {
		errs = append(errs, fmt.Errorf("tab recycle-after must be at least 1, got %d", c.TabRecycleAfter))
	}
	if c.CallTimeout < 0 {
		errs = append(errs, fmt.Errorf("call timeout must be positive, got %s", c.CallTimeout))
	}
	if c.Nice < 0 || c.Nice > MaxNice {
		errs = append(errs, fmt.Errorf("nice must be 0 to %d, got %d", MaxNice, c.Nice))
	}
	for k := range c.ExtraFlags {
		name := strings.TrimLeft(k, "-")
		switch {
		case name == "" || strings.ContainsAny(name, "= \t\n"):
			errs = append(errs, fmt.Errorf("extra flag %q: not a flag name", k))
		case reservedFlags[name] || strings.HasPrefix(name, "rod-"):
			errs = append(errs, fmt.Errorf("extra flag %q: set by the capture package itself", k))
		}
	}
	return errors.Join(errs...)
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}

// chromiumEnv is Chromium's whole environment. It renders untrusted pages, so it gets
// nothing of the worker's (database and S3 credentials, SNAPQ_* settings): a fixed PATH
// for Debian's wrapper script, HOME and the XDG directories inside its temporary profile,
// the temporary directory the profile lives in, and the worker's TZ and LANG, which change
// what pages see (Date, Accept-Language) and so are passed on when set.
func chromiumEnv(userDataDir string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + userDataDir,
		"XDG_CONFIG_HOME=" + filepath.Join(userDataDir, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(userDataDir, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(userDataDir, ".local", "share"),
		"TMPDIR=" + os.TempDir(),
	}
	for _, k := range []string{"TZ", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// disabledFeatures is the --disable-features list. Chromium's own services must not call
// home through the egress proxy (which would resolve their hostnames): autofill,
// translation, optimization hints, media router, domain reliability. The omnibox's WebUI
// popups go too: headless Chromium prewarms them in every browser context, one more
// renderer process (~160 MB RSS) per tab for a window no one sees. Without site
// isolation, site-per-process is disabled too (rod's default).
func disabledFeatures(siteIsolation bool) []string {
	f := []string{"TranslateUI", "AutofillServerCommunication",
		"OptimizationHints", "OptimizationGuideModelDownloading", "MediaRouter", "DialMediaRouteProvider",
		"CertificateTransparencyComponentUpdater", "InterestFeedContentSuggestions",
		"WebUIOmniboxPopup", "WebUIOmniboxAimPopup"}
	if !siteIsolation {
		f = append([]string{"site-per-process"}, f...)
	}
	return f
}

// newLauncher builds the Chromium command line. rod's defaults are kept (they disable
// background work) except popup unblocking; Bin is always set so rod never downloads a browser.
func (c Config) newLauncher(userDataDir string) *launcher.Launcher {
	l := launcher.New().
		Bin(c.ChromeBin).
		Env(chromiumEnv(userDataDir)...).
		WorkingDir(userDataDir).
		Headless(true).
		Leakless(true).
		UserDataDir(userDataDir).
		Delete("disable-popup-blocking"). // popups would outlive the job in the slot's context
		Set("disable-gpu").
		Set("disable-background-networking").
		Set("disable-component-update").
		Set("disable-sync").
		Set("no-first-run").
		Set("disable-dev-shm-usage").
		Set("hide-scrollbars").
		Set("mute-audio").
		Set("no-default-browser-check").
		Set("disable-extensions").
		Set("disable-features", disabledFeatures(c.SiteIsolation)...).
		Set("disable-domain-reliability").
		Set("no-pings")
	// CDP goes over Chromium's fds 3 and 4 (pipe.go), not a port other local processes reach.
	l.Delete(flags.RemoteDebuggingPort)
	l.Set("remote-debugging-pipe")
	if c.SiteIsolation {
		l.Delete("disable-site-isolation-trials") // one of rod's defaults
	}
	// The sandbox is on unless configured off: rod's launcher turns it off by itself in a
	// container, and as root the process is started as ChromeUser instead (launch.go).
	l.NoSandbox(c.NoSandbox)
	for k, v := range c.ExtraFlags {
		name := flags.Flag(strings.TrimLeft(k, "-"))
		if v == "" {
			l.Set(name)
		} else {
			l.Set(name, v)
		}
	}
	return l
}
