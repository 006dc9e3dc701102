package session

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// docs/sessions.md holds the verb table the dispatcher uses, row for row.
func TestDocsHoldTheVerbTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/sessions.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), VerbTable()) {
		t.Errorf("docs/sessions.md does not hold the verb table; paste this:\n%s", VerbTable())
	}
}

func TestHelpListsEveryVerb(t *testing.T) {
	h, err := Help("")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range verbs {
		if !strings.Contains(h, "\n  "+v.Name) {
			t.Errorf("help has no line for %s", v.Name)
		}
	}
	one, err := Help("goto")
	if err != nil || !strings.HasPrefix(one, "  open|goto URL") || strings.Count(one, "\n") != 0 {
		t.Errorf("help goto = %q, %v", one, err)
	}
	if _, err := Help("fly"); err == nil {
		t.Error("help of an unknown verb succeeded")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  Command
		code string
	}{
		{"ok", Command{Command: "click", Args: []string{"e3"}}, ""},
		{"alias", Command{Command: "goto", Args: []string{"http://x"}}, ""},
		{"unknown", Command{Command: "fly"}, "unknown_command"},
		{"too few", Command{Command: "fill", Args: []string{"e3"}}, "bad_args"},
		{"too many", Command{Command: "snapshot", Args: []string{"x"}}, "bad_args"},
		{"huge arg", Command{Command: "type", Args: []string{strings.Repeat("a", MaxArgBytes+1)}}, "bad_args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.cmd)
			code := ""
			if ce, ok := err.(*commandError); ok {
				code = ce.code
			}
			if code != tc.code {
				t.Errorf("code %q, want %q (%v)", code, tc.code, err)
			}
		})
	}
}

func TestCapReply(t *testing.T) {
	s := strings.Repeat("é", 1000) // 2000 bytes
	out, cut := capReply(s, 500)
	if !cut || len(out) > 500 || !utf8.ValidString(out) || !strings.Contains(out, TruncationMarker+" the reply was 2000 bytes") {
		t.Errorf("cut %v, %d bytes, valid %v: %q", cut, len(out), utf8.ValidString(out), out[len(out)-80:])
	}
	if out, cut := capReply("short", 500); cut || out != "short" {
		t.Errorf("short reply changed: %q %v", out, cut)
	}
}

func TestNormalizeOptions(t *testing.T) {
	var o Options
	if err := o.Normalize(); err != nil || o.IdleTimeoutS != 300 || o.Viewport.Width != 1280 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o = Options{IdleTimeoutS: 1801}
	if err := o.Normalize(); err == nil || err.(*FieldError).Field != "idle_timeout_s" {
		t.Errorf("idle 1801: %v", err)
	}
	o = Options{AuthProfile: "shop"}
	if err := o.Normalize(); err == nil || err.(*FieldError).Field != "auth_profile" {
		t.Errorf("auth_profile: %v", err)
	}
	o = Options{Block: Block{ResourceTypes: []string{"bogus"}}}
	if err := o.Normalize(); err == nil || err.(*FieldError).Field != "block.resource_types[0]" {
		t.Errorf("bad resource type: %v", err)
	}
}
