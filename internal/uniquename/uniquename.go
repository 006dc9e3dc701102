// Package uniquename makes names unique within one set — the folders of an
// archive or a download, the files of one folder — so that no two things
// share a name, whatever the others are called. A repeated name gets the
// first suffix -2, -3, … that no other name in the set has (for a file
// name, before its extension: shot.png, shot-2.png). Names are compared
// without regard to case: an archive unpacked on a case-insensitive file
// system (macOS, Windows) must not merge two folders either.
package uniquename

import (
	"path"
	"strconv"
	"strings"
)

// Set is the names taken so far. The zero value is empty and ready.
type Set struct {
	taken map[string]bool
}

func key(name string) string { return strings.ToLower(name) }

// Reserve marks names as taken: Take never returns them.
func (s *Set) Reserve(names ...string) {
	if s.taken == nil {
		s.taken = map[string]bool{}
	}
	for _, n := range names {
		s.taken[key(n)] = true
	}
}

// Taken reports whether name is taken.
func (s *Set) Taken(name string) bool { return s.taken[key(name)] }

// Take returns name when it is free, else name-2, name-3, … the first that
// is free, and marks what it returns taken.
func (s *Set) Take(name string) string { return s.take(name, "") }

// TakeFile is Take for a file name: the suffix goes before the extension.
func (s *Set) TakeFile(name string) string {
	ext := path.Ext(name)
	if ext == name { // ".png" is a name, not an extension
		ext = ""
	}
	return s.take(strings.TrimSuffix(name, ext), ext)
}

func (s *Set) take(stem, ext string) string {
	out := stem + ext
	for n := 2; s.Taken(out); n++ {
		out = stem + "-" + strconv.Itoa(n) + ext
	}
	s.Reserve(out)
	return out
}

// Names returns names made unique, in order: the first of each spelling
// keeps it, unless reserved; every repeat (and a reserved name) gets the
// first free suffix, free of every given name too, so a repeat of "dup"
// never takes the "dup-2" another item is called.
func Names(names []string, reserved ...string) []string {
	return assign(names, reserved, (*Set).Take)
}

// Files is Names for file names (the suffix before the extension).
func Files(names []string, reserved ...string) []string {
	return assign(names, reserved, (*Set).TakeFile)
}

func assign(names, reserved []string, take func(*Set, string) string) []string {
	var s Set
	s.Reserve(reserved...)
	out := make([]string, len(names))
	done := make([]bool, len(names))
	for i, n := range names { // first of each spelling
		if !s.Taken(n) {
			s.Reserve(n)
			out[i], done[i] = n, true
		}
	}
	for i, n := range names {
		if !done[i] {
			out[i] = take(&s, n)
		}
	}
	return out
}
