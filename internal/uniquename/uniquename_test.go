package uniquename

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       []string
		reserved []string
		want     []string
	}{
		{"issue 26: dup, dup-2, dup", []string{"dup", "dup-2", "dup"}, nil, []string{"dup", "dup-2", "dup-3"}},
		{"repeat before its suffix", []string{"dup", "dup", "dup-2"}, nil, []string{"dup", "dup-3", "dup-2"}},
		{"suffixes taken in a row", []string{"a", "a-2", "a-3", "a", "a"}, nil, []string{"a", "a-2", "a-3", "a-4", "a-5"}},
		{"suffix of a suffix", []string{"a-2", "a-2", "a-2-2"}, nil, []string{"a-2", "a-2-3", "a-2-2"}},
		{"case", []string{"Home", "home"}, nil, []string{"Home", "home-2"}},
		{"reserved", []string{"manifest.json", "x"}, []string{"manifest.json"}, []string{"manifest.json-2", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Names(tt.in, tt.reserved...)); diff != "" {
				t.Errorf("Names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	got := Files([]string{"shot.png", "shot-2.png", "shot.png", ".png", ".png", "page.md"})
	want := []string{"shot.png", "shot-2.png", "shot-3.png", ".png", ".png-2", "page.md"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	var s Set
	if a, b, c := s.TakeFile("a.png"), s.TakeFile("a.png"), s.TakeFile("A.PNG"); a != "a.png" || b != "a-2.png" || c != "A-3.PNG" {
		t.Errorf("TakeFile = %s %s %s", a, b, c)
	}
}
