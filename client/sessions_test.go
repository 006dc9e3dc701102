package client

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name, line, verb string
		args             []string
		bad              bool
	}{
		{name: "plain", line: "click e3", verb: "click", args: []string{"e3"}},
		{name: "quotes", line: `fill e3 'Ada Lovelace' "x y"`, verb: "fill", args: []string{"e3", "Ada Lovelace", "x y"}},
		{name: "escape", line: `type a\ b`, verb: "type", args: []string{"a b"}},
		{name: "empty quotes", line: `fill e3 ''`, verb: "fill", args: []string{"e3", ""}},
		{name: "blank", line: "   ", verb: ""},
		{name: "open quote", line: `fill 'x`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verb, args, err := ParseCommandLine(tc.line)
			if (err != nil) != tc.bad {
				t.Fatalf("err %v", err)
			}
			if tc.bad {
				return
			}
			if verb != tc.verb || !cmp.Equal(args, tc.args) && len(args)+len(tc.args) > 0 {
				t.Errorf("got %q %q, want %q %q", verb, args, tc.verb, tc.args)
			}
		})
	}
}
