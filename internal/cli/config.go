package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// defaultAPI is the api's address when nothing names one: where `make up`
// starts it.
const defaultAPI = "http://127.0.0.1:8080"

// settings are where the api is and how to authenticate.
type settings struct {
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
}

// resolveSettings takes each setting from the flag, else the environment
// (SNAPQ_URL, SNAPQ_API_KEY), else the config file. configPath "" reads the
// default file when it exists; a named file must exist. The API key may also
// come from a file (--api-key-file, else SNAPQ_API_KEY_FILE), which does not
// show in `ps` as --api-key does: --api-key, --api-key-file, SNAPQ_API_KEY,
// SNAPQ_API_KEY_FILE, the config file, in that order.
func resolveSettings(flagURL, flagKey, flagKeyFile, configPath string, getenv func(string) string) (settings, error) {
	if flagKey == "" {
		keyFile := first(flagKeyFile, getenv("SNAPQ_API_KEY_FILE"))
		if flagKeyFile == "" && getenv("SNAPQ_API_KEY") != "" {
			keyFile = ""
		}
		if keyFile != "" {
			k, err := readKeyFile(keyFile)
			if err != nil {
				return settings{}, err
			}
			flagKey = k
		}
	}
	return resolveFrom(flagURL, flagKey, configPath, getenv)
}

// maxKeyFile bounds an API key file.
const maxKeyFile = 4 << 10

// readKeyFile reads an API key from path: its content, surrounding white
// space trimmed.
func readKeyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("api key file: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return "", fmt.Errorf("api key file %s: %w", path, err)
	}
	key := strings.TrimSpace(string(raw))
	switch {
	case len(raw) > maxKeyFile:
		return "", fmt.Errorf("api key file %s: larger than %d bytes", path, maxKeyFile)
	case key == "" || strings.ContainsAny(key, " \t\r\n"):
		return "", fmt.Errorf("api key file %s: must hold one key", path)
	}
	return key, nil
}

// resolveFrom is resolveSettings once the key's file, if any, is read.
func resolveFrom(flagURL, flagKey, configPath string, getenv func(string) string) (settings, error) {
	var file settings
	path, must := configPath, configPath != ""
	if path == "" {
		if dir, err := os.UserConfigDir(); err == nil {
			path = filepath.Join(dir, "snapq", "config.yaml")
		}
	}
	if path != "" {
		raw, err := os.ReadFile(path)
		switch {
		case err == nil:
			if err := yaml.UnmarshalStrict(raw, &file); err != nil {
				return settings{}, fmt.Errorf("config file %s: %w", path, err)
			}
		case must || !errors.Is(err, fs.ErrNotExist):
			return settings{}, fmt.Errorf("config file: %w", err)
		}
	}
	s := settings{
		URL:    first(flagURL, getenv("SNAPQ_URL"), file.URL, defaultAPI),
		APIKey: first(flagKey, getenv("SNAPQ_API_KEY"), file.APIKey),
	}
	return s, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
