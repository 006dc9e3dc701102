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
	tests := []struct {
		name    string
		cfg     Config
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
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
	if os.Geteuid() == 0 {
		want = append(want, "--no-sandbox")
	}
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("launch args lack %s: %v", w, args)
		}
	}
	if slices.Contains(args, "--disable-popup-blocking") {
		t.Error("popups must stay blocked: they would outlive the job in the slot's context")
	}
	if l := cfg.newLauncher("/tmp/profile"); l.Get("rod-bin") != DefaultChromeBin {
		t.Errorf("launcher bin = %q, want %q (rod must never download a browser)", l.Get("rod-bin"), DefaultChromeBin)
	}
}
