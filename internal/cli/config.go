package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
// default file when it exists; a named file must exist.
func resolveSettings(flagURL, flagKey, configPath string, getenv func(string) string) (settings, error) {
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
