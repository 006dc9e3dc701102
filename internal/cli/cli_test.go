package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/client"
	"github.com/snapq/snapq/internal/uniquename"
)

func TestReadTargets(t *testing.T) {
	t.Parallel()
	in := "# pages\n\nhttp://a.test/\nhome\thttp://b.test/x\n  http://c.test/  \n#skip\thttp://d.test/\n"
	got, err := readTargets(strings.NewReader(in), "urls.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []client.Target{{URL: "http://a.test/"}, {Name: "home", URL: "http://b.test/x"}, {URL: "http://c.test/"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if _, err := readTargets(strings.NewReader("http://a.test/ http://b.test/\n"), "urls.txt"); err == nil ||
		!strings.Contains(err.Error(), "urls.txt:1") {
		t.Errorf("two URLs on a line: %v, want an error naming urls.txt:1", err)
	}
}

func TestSetOption(t *testing.T) {
	t.Parallel()
	opts := map[string]any{"wait": map[string]any{"until": "load"}}
	for _, s := range []string{"viewport.width=390", "viewport.device_scale_factor=2.5", "wait.best_attempt=true",
		"wait.selector=#main", "outputs=[\"screenshot\",\"pdf\"]", "screenshot.format=png", "emulate.locale=", "pdf.page_ranges=1-3"} {
		if err := setOption(opts, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	raw, _ := json.Marshal(opts)
	want := `{"emulate":{"locale":""},"outputs":["screenshot","pdf"],"pdf":{"page_ranges":"1-3"},"screenshot":{"format":"png"},` +
		`"viewport":{"device_scale_factor":2.5,"width":390},"wait":{"best_attempt":true,"selector":"#main","until":"load"}}`
	if string(raw) != want {
		t.Errorf("options\n got %s\nwant %s", raw, want)
	}
	if err := checkOptions(raw); err != nil {
		t.Errorf("checkOptions: %v", err)
	}
	for _, bad := range []string{"novalue", "=1", "wait.until.x=1", "a..b=1"} {
		if err := setOption(opts, bad); err == nil {
			t.Errorf("--set %q: no error", bad)
		}
	}
	if err := checkOptions([]byte(`{"viewport":{"widht":1}}`)); err == nil {
		t.Error("a misspelt option passed checkOptions")
	}
	if err := checkOptions([]byte(`{"viewport":{"width":"wide"}}`)); err == nil {
		t.Error("a string width passed checkOptions")
	}
}

func TestSettingsPrecedence(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("url: http://file:1\napi_key: sq_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SNAPQ_URL": "http://env:2"}
	got, err := resolveSettings("", "", "", path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got != (settings{URL: "http://env:2", APIKey: "sq_file"}) {
		t.Errorf("env over file: %+v", got)
	}
	got, _ = resolveSettings("http://flag:3", "sq_flag", "", path, func(k string) string { return env[k] })
	if got != (settings{URL: "http://flag:3", APIKey: "sq_flag"}) {
		t.Errorf("flags over env: %+v", got)
	}
	if _, err := resolveSettings("", "", "", filepath.Join(t.TempDir(), "missing.yaml"), func(string) string { return "" }); err == nil {
		t.Error("a named config file that does not exist: no error")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte("ulr: x\n"), 0o600)
	if _, err := resolveSettings("", "", "", bad, func(string) string { return "" }); err == nil {
		t.Error("a misspelt config key: no error")
	}
}

func TestSafeNames(t *testing.T) {
	t.Parallel()
	var in []string
	for _, n := range []string{"home", "home", "../etc", "..", "", "a/b", "home"} {
		in = append(in, safeName(n, "job"))
	}
	got := uniquename.Names(in)
	want := []string{"home", "home-2", "job", "job-2", "job-3", "a-b", "home-3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

// The API key can come from a file (flag or env), so it does not show in ps;
// --api-key still wins, and SNAPQ_API_KEY wins over SNAPQ_API_KEY_FILE.
func TestAPIKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile, envFile := filepath.Join(dir, "key"), filepath.Join(dir, "envkey")
	_ = os.WriteFile(keyFile, []byte("sq_fromfile\n"), 0o600)
	_ = os.WriteFile(envFile, []byte("  sq_fromenvfile  "), 0o600)
	noConfig := filepath.Join(dir, "config.yaml")
	_ = os.WriteFile(noConfig, []byte("api_key: sq_config\n"), 0o600)
	for _, tc := range []struct {
		name, flag, flagFile string
		env                  map[string]string
		want                 string
	}{
		{"flag file", "", keyFile, nil, "sq_fromfile"},
		{"flag wins", "sq_flag", keyFile, nil, "sq_flag"},
		{"flag file over env", "", keyFile, map[string]string{"SNAPQ_API_KEY": "sq_env"}, "sq_fromfile"},
		{"env file", "", "", map[string]string{"SNAPQ_API_KEY_FILE": envFile}, "sq_fromenvfile"},
		{"env over env file", "", "", map[string]string{"SNAPQ_API_KEY": "sq_env", "SNAPQ_API_KEY_FILE": envFile}, "sq_env"},
		{"config last", "", "", nil, "sq_config"},
	} {
		got, err := resolveSettings("", tc.flag, tc.flagFile, noConfig, func(k string) string { return tc.env[k] })
		if err != nil || got.APIKey != tc.want {
			t.Errorf("%s: key %q, %v; want %q", tc.name, got.APIKey, err, tc.want)
		}
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	for _, bad := range []string{empty, filepath.Join(dir, "missing")} {
		if _, err := resolveSettings("", "", bad, noConfig, func(string) string { return "" }); err == nil {
			t.Errorf("key file %s: no error", bad)
		}
	}
}

// TestDownloadNames: the folders of a download (and the files of a job's
// folder) are unique whatever the jobs are called: a repeat of dup does not
// take the dup-2 another job is called, nor manifest.json (issue 26 item 7).
func TestDownloadNames(t *testing.T) {
	t.Parallel()
	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	a := &app{c: c}
	b := &client.Batch{ID: "b"}
	var js []client.Job
	for _, n := range []string{"dup", "dup", "dup-2", "manifest.json"} {
		js = append(js, client.Job{Name: n})
	}
	m := a.newManifest(b, js, t.TempDir(), "files")
	var got []string
	for _, j := range m.Jobs {
		got = append(got, j.Dir)
	}
	if diff := cmp.Diff([]string{"dup", "dup-3", "dup-2", "manifest.json-2"}, got); diff != "" {
		t.Errorf("folders (-want +got):\n%s", diff)
	}
	files := artifactNames([]client.Artifact{{Name: "shot.png"}, {Name: "shot.png"}, {Name: "shot-2.png"}})
	if diff := cmp.Diff([]string{"shot.png", "shot-3.png", "shot-2.png"}, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}
