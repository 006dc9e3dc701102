package capture

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// profilePrefix names the temporary user-data-dirs this package creates in os.TempDir().
const profilePrefix = "snapq-chromium-"

// socketDir returns the org.chromium.Chromium.* directory (in the system's temporary
// directory) holding the singleton socket of the Chromium using profile dir, or "". Chromium
// leaves it behind when it is killed.
func socketDir(dir string) string {
	target, err := os.Readlink(filepath.Join(dir, "SingletonSocket"))
	if err != nil {
		return ""
	}
	sock := filepath.Dir(target)
	if !strings.HasPrefix(filepath.Base(sock), "org.chromium.Chromium.") {
		return ""
	}
	return sock
}

// removeProfile deletes a Chromium user-data-dir and its singleton socket directory.
func removeProfile(dir string) error {
	if sock := socketDir(dir); sock != "" {
		_ = os.RemoveAll(sock)
	}
	return os.RemoveAll(dir)
}

// removeProfileSettled removes dir once the browser using it has exited, trying again for a
// while when that fails: a killed browser's children (its zygote, renderers, GPU process) may
// still create files in the profile for a moment after it died, and a file created while the
// directory is removed fails the removal (an empty profile was once left so).
func removeProfileSettled(dir string) error {
	var err error
	for range 20 {
		if err = removeProfile(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// sweepStaleProfiles removes profiles left by earlier processes that were killed before they
// could clean up (a worker killed with SIGKILL). A profile is stale only when its
// SingletonLock names this host and a process that no longer exists.
func sweepStaleProfiles(log *slog.Logger) {
	host, err := os.Hostname()
	if err != nil {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), profilePrefix+"*"))
	for _, dir := range dirs {
		lock, err := os.Readlink(filepath.Join(dir, "SingletonLock")) // "<host>-<pid>"
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(lock, '-')
		if i < 0 || lock[:i] != host {
			continue
		}
		pid, err := strconv.Atoi(lock[i+1:])
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if err := removeProfile(dir); err == nil {
			log.Info("removed stale chromium profile", "dir", dir, "pid", pid)
		}
	}
}

// profilePreferences has Chromium download a PDF rather than show it in its viewer, so a PDF
// target is taken like any download (nativedl.go).
const profilePreferences = `{"plugins":{"always_open_pdf_externally":true}}`

// writePreferences writes the fresh profile dir's Default/Preferences, giving both to cred
// when not nil (Chromium writes its own settings there).
func writePreferences(dir string, cred *credential) error {
	def := filepath.Join(dir, "Default")
	if err := os.MkdirAll(def, 0o700); err != nil {
		return fmt.Errorf("create the profile's Default dir: %w", err)
	}
	prefs := filepath.Join(def, "Preferences")
	if err := os.WriteFile(prefs, []byte(profilePreferences), 0o600); err != nil {
		return fmt.Errorf("write the profile's preferences: %w", err)
	}
	if cred == nil {
		return nil
	}
	for _, p := range []string{def, prefs} {
		if err := os.Chown(p, int(cred.uid), int(cred.gid)); err != nil {
			return fmt.Errorf("give the profile's preferences to chromium's user: %w", err)
		}
	}
	return nil
}
