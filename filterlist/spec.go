package filterlist

import (
	"fmt"
	"strings"
)

// Spec is what SNAPQ_FILTER_LISTS says: Off (no filter lists: requests that
// ask for blocking by category fail), or the files of the categories it
// names (the others keep the shipped lists).
type Spec struct {
	Off   bool
	Files map[string][]string
}

// ParseSpec reads SNAPQ_FILTER_LISTS: empty for the shipped lists, "off",
// or "category=file[,file…]" entries separated by ";", e.g.
// "ads=/etc/snapq/easylist.txt,/etc/snapq/extra.txt;trackers=/etc/snapq/easyprivacy.txt.gz".
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{}, nil
	}
	if s == "off" {
		return Spec{Off: true}, nil
	}
	sp := Spec{Files: map[string][]string{}}
	for i, entry := range strings.Split(s, ";") {
		cat, files, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || !contains(Categories(), cat) {
			return Spec{}, fmt.Errorf("entry %d %q: want category=file[,file], category one of %s", i+1, entry, strings.Join(Categories(), ", "))
		}
		if _, dup := sp.Files[cat]; dup {
			return Spec{}, fmt.Errorf("entry %d: %s is named twice", i+1, cat)
		}
		for _, f := range strings.Split(files, ",") {
			if f = strings.TrimSpace(f); f == "" || !strings.HasPrefix(f, "/") {
				return Spec{}, fmt.Errorf("entry %d: %q is not an absolute file path", i+1, f)
			}
			sp.Files[cat] = append(sp.Files[cat], f)
		}
	}
	return sp, nil
}
