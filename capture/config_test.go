package capture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "chromium")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const useradd = "create it (useradd --system --no-create-home --shell /usr/sbin/nologin snapq-no-such-user), set SNAPQ_CHROME_USER to another unprivileged user, or set SNAPQ_CHROME_NO_SANDBOX=true"
	tests := []struct {
		name    string
		cfg     Config
		root    bool   // validate as root (euid 0) instead of as uid 1000
		wantErr string // substring; "" means valid
	}{
		{name: "zero values are defaults", cfg: Config{ChromeBin: "/bin/sh"}},
		{name: "missing chromium", cfg: Config{ChromeBin: filepath.Join(dir, "nope")},
			wantErr: "chromium not found at " + filepath.Join(dir, "nope") + ": install Debian's chromium package (apt-get install chromium) or set SNAPQ_CHROME_BIN"},
		{name: "not executable", cfg: Config{ChromeBin: notExec}, wantErr: "chromium not found at " + notExec},
		{name: "directory", cfg: Config{ChromeBin: dir}, wantErr: "chromium not found at " + dir},
		{name: "remote URL needs no binary", cfg: Config{ChromeBin: filepath.Join(dir, "nope"), RemoteURL: "ws://127.0.0.1:9222/devtools/browser/x"}},
		{name: "negative tabs", cfg: Config{ChromeBin: "/bin/sh", Tabs: -1}, wantErr: "tabs must be at least 1"},
		{name: "negative call timeout", cfg: Config{ChromeBin: "/bin/sh", CallTimeout: -1}, wantErr: "call timeout"},
		{name: "extra flag with =", cfg: Config{ChromeBin: "/bin/sh", ExtraFlags: map[string]string{"proxy-server=x": ""}}, wantErr: "not a flag name"},
		{name: "reserved extra flag", cfg: Config{ChromeBin: "/bin/sh", ExtraFlags: map[string]string{"--user-data-dir": "/tmp"}}, wantErr: "set by the capture package"},
		{name: "extra flag ok", cfg: Config{ChromeBin: "/bin/sh", ExtraFlags: map[string]string{"--proxy-server": "http://127.0.0.1:1"}}},
		{name: "as root the chromium user must exist", root: true, cfg: Config{ChromeBin: "/bin/sh", ChromeUser: "snapq-no-such-user"},
			wantErr: `chromium user "snapq-no-such-user" does not exist: as root the worker starts Chromium as that user so Chromium can sandbox the pages it renders; ` + useradd},
		{name: "as root the chromium user must not be root", root: true, cfg: Config{ChromeBin: "/bin/sh", ChromeUser: "root"},
			wantErr: `chromium user "root" is root`},
		{name: "as root an unprivileged chromium user", root: true, cfg: Config{ChromeBin: "/bin/sh", ChromeUser: "nobody"}},
		{name: "as root without a sandbox no user is needed", root: true, cfg: Config{ChromeBin: "/bin/sh", ChromeUser: "snapq-no-such-user", NoSandbox: true}},
		{name: "as root a remote browser needs no user", root: true, cfg: Config{RemoteURL: "ws://127.0.0.1:9222/devtools/browser/x", ChromeUser: "snapq-no-such-user"}},
		{name: "not root needs no user", cfg: Config{ChromeBin: "/bin/sh", ChromeUser: "snapq-no-such-user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			euid := 1000
			if tt.root {
				euid = 0
			}
			err := tt.cfg.validate(euid)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLaunchFlags(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.ExtraFlags = map[string]string{"--proxy-server": "http://127.0.0.1:1", "lang": ""}
	args := cfg.newLauncher("/tmp/profile").FormatArgs()
	want := []string{"--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
		"--no-default-browser-check", "--disable-extensions", "--user-data-dir=/tmp/profile",
		"--proxy-server=http://127.0.0.1:1", "--lang"}
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("launch args lack %s: %v", w, args)
		}
	}
	// The sandbox stays on, as root and in containers (where rod would turn it off), and
	// site isolation stays off, unless configured. DevTools is a pipe, never a port.
	for _, a := range args {
		if a == "--no-sandbox" || strings.HasPrefix(a, "--remote-debugging-port") || strings.HasPrefix(a, "--remote-debugging-address") {
			t.Errorf("launch args have %s: %v", a, args)
		}
	}
	if !slices.Contains(args, "--remote-debugging-pipe") {
		t.Errorf("launch args lack --remote-debugging-pipe: %v", args)
	}
	features := func(args []string) string {
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--disable-features="); ok {
				return v
			}
		}
		return ""
	}
	if f := features(args); !strings.HasPrefix(f, "site-per-process,") || !slices.Contains(args, "--disable-site-isolation-trials") {
		t.Errorf("site isolation is on by default: --disable-features=%s", f)
	}
	iso := cfg
	iso.SiteIsolation, iso.NoSandbox = true, true
	isoArgs := iso.newLauncher("/tmp/profile").FormatArgs()
	if f := features(isoArgs); strings.Contains(f, "site-per-process") || !strings.Contains(f, "TranslateUI") || slices.Contains(isoArgs, "--disable-site-isolation-trials") {
		t.Errorf("SiteIsolation: --disable-features=%s, args %v", f, isoArgs)
	}
	if !slices.Contains(isoArgs, "--no-sandbox") {
		t.Errorf("NoSandbox: args lack --no-sandbox: %v", isoArgs)
	}
	if slices.Contains(args, "--disable-popup-blocking") {
		t.Error("popups must stay blocked: they would outlive the job in the slot's context")
	}
	if l := cfg.newLauncher("/tmp/profile"); l.Get("rod-bin") != DefaultChromeBin {
		t.Errorf("launcher bin = %q, want %q (rod must never download a browser)", l.Get("rod-bin"), DefaultChromeBin)
	}
}
