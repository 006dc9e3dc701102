package env

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A credential comes from its variable or from the file its _FILE variable
// names, never from both; what goes wrong is reported without the value.
func TestSecretFromFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		value   string // SNAPQ_TEST_SECRET; "-" leaves it unset
		file    string // SNAPQ_TEST_SECRET_FILE; "-" leaves it unset
		want    string
		wantErr string
	}{
		{name: "neither", value: "-", file: "-", want: "def"},
		{name: "variable", value: "from-env", file: "-", want: "from-env"},
		{name: "file", value: "-", file: write("plain", "from-file"), want: "from-file"},
		{name: "file with newline", value: "-", file: write("nl", "from-file\n"), want: "from-file"},
		{name: "file with CRLF", value: "-", file: write("crlf", "from-file\r\n"), want: "from-file"},
		{name: "inner newlines kept", value: "-", file: write("multi", "a\nb\n"), want: "a\nb"},
		{name: "empty variable, file", value: "", file: write("empty-var", "from-file"), want: "from-file"},
		{name: "both", value: "from-env", file: write("both", "from-file"), want: "def", wantErr: "SNAPQ_TEST_SECRET and SNAPQ_TEST_SECRET_FILE are both set"},
		{name: "missing file", value: "-", file: filepath.Join(dir, "nope"), want: "def", wantErr: "SNAPQ_TEST_SECRET_FILE=" + filepath.Join(dir, "nope")},
		{name: "empty file", value: "-", file: write("empty", "\n"), want: "def", wantErr: "the file is empty"},
		{name: "huge file", value: "-", file: write("huge", strings.Repeat("x", maxSecretFile+1)), want: "def", wantErr: "larger than 64 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setOrUnset(t, "SNAPQ_TEST_SECRET", tt.value)
			setOrUnset(t, "SNAPQ_TEST_SECRET_FILE", tt.file)
			var r Reader
			got := r.Secret("SNAPQ_TEST_SECRET", "def")
			if got != tt.want {
				t.Errorf("Secret = %q, want %q", got, tt.want)
			}
			err := r.Err()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Err = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Err = %v, want it to contain %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "from-"):
				t.Errorf("Err %q repeats a value", err)
			}
		})
	}
}

// Every credential the binaries read goes through Secret, so each has its _FILE variant.
func TestCredentialsHaveFileVariants(t *testing.T) {
	dir := t.TempDir()
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes, base64
	for _, tt := range []struct {
		name, content string
		read          func(*Reader) string
		want          string
	}{
		{"SNAPQ_DATABASE_URL", "postgres://u:pw@db/x\n", DatabaseURL, "postgres://u:pw@db/x"},
		{"SNAPQ_S3_ACCESS_KEY", "ak\n", func(r *Reader) string { return S3(r).AccessKey }, "ak"},
		{"SNAPQ_S3_SECRET_KEY", "sk\n", func(r *Reader) string { return S3(r).SecretKey }, "sk"},
		{"SNAPQ_SECRET_KEY", key + "\n", func(r *Reader) string {
			if SecretSealer(r) == nil {
				return "no sealer"
			}
			return "sealer"
		}, "sealer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			setOrUnset(t, tt.name, "-")
			setOrUnset(t, tt.name+FileSuffix, p)
			var r Reader
			if got := tt.read(&r); got != tt.want || r.Err() != nil {
				t.Errorf("%s from %s%s = %q (err %v), want %q", tt.name, tt.name, FileSuffix, got, r.Err(), tt.want)
			}
		})
	}
}

// setOrUnset sets name to v for the test, or unsets it when v is "-".
func setOrUnset(t *testing.T, name, v string) {
	t.Helper()
	t.Setenv(name, v) // restores the old value when the test ends
	if v == "-" {
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}
