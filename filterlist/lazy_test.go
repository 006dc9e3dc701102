package filterlist

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLazyChecksFilesAtStartAndLoadsOnFirstUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]string{}
	for cat, rule := range map[string]string{Ads: "||ads.example^", Trackers: "||track.example^", ChatWidgets: "||chat.example^"} {
		name := filepath.Join(dir, cat+".txt")
		if err := os.WriteFile(name, []byte(rule+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		files[cat] = []string{name}
	}
	if _, err := NewLazy(map[string][]string{Ads: {filepath.Join(dir, "missing.txt")}}, nil); err == nil {
		t.Fatal("a missing list file was accepted at start")
	}
	l, err := NewLazy(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.eng != nil {
		t.Fatal("the lists were loaded before any use")
	}
	got := l.Match("http://track.example/p.gif", "http://site.example/", "Image", false, Categories())
	if got != Trackers {
		t.Fatalf("tracker request matched %q, want %q", got, Trackers)
	}
	if got := l.Match("http://site.example/app.js", "http://site.example/", "Script", false, Categories()); got != "" {
		t.Fatalf("a first-party script matched %q", got)
	}
}
