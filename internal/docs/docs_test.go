package docs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's directory.
const root = "../.."

// configPage is the one home of every SNAPQ_* variable.
const configPage = "docs/operating/configuration.md"

// variableRead is how the code names a variable it reads: a string literal.
var variableRead = regexp.MustCompile(`"(SNAPQ_[A-Z0-9_]+)"`)

// readsEnv says whether a Go source file is one whose SNAPQ_* variables a
// user may set: the binaries (cmd/), the scripts, and internal packages
// (internal/, cmd/internal/, capture/internal/, …).
func readsEnv(rel string) bool {
	parts := strings.Split(rel, "/")
	return parts[0] == "cmd" || parts[0] == "scripts" || slices.Contains(parts[:len(parts)-1], "internal")
}

// sourceFiles lists the module's Go files, tests left out, relative to the
// root with forward slashes; hidden directories, testdata and node_modules
// are skipped.
func sourceFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// variablesRead maps each SNAPQ_* variable the code reads to the first file
// that reads it.
func variablesRead(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	for _, rel := range sourceFiles(t) {
		if !readsEnv(rel) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range variableRead.FindAllSubmatch(src, -1) {
			if _, ok := found[string(m[1])]; !ok {
				found[string(m[1])] = rel
			}
		}
	}
	if found["SNAPQ_DATABASE_URL"] == "" || found["SNAPQ_CHROME_BIN"] == "" {
		t.Fatalf("found %d variables, not SNAPQ_DATABASE_URL and SNAPQ_CHROME_BIN: has the configuration moved?", len(found))
	}
	return found
}

// TestConfigurationDocumentsEveryVariable: a variable the code reads has a
// row (its name in backquotes) on the configuration page.
func TestConfigurationDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(root, configPage))
	if err != nil {
		t.Fatal(err)
	}
	vars := variablesRead(t)
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		// A name ending in "_" is a prefix the code completes (SNAPQ_BUDGET_<KIND>_PER_KEY):
		// some documented variable must start with it.
		if strings.HasSuffix(name, "_") && strings.Contains(string(page), "`"+name) {
			continue
		}
		if !strings.Contains(string(page), "`"+name+"`") {
			t.Errorf("%s (read in %s) is not documented in %s", name, vars[name], configPage)
		}
	}
}

// TestReadmeIsTheFrontDoor: the README stays short and opens with the two
// commands (the before-stop hook and DESIGN.md's set-up contract ask the same).
func TestReadmeIsTheFrontDoor(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(readme), "\n"), "\n")
	if len(lines) > 300 {
		t.Errorf("README.md has %d lines, want at most 300: the manual lives in docs/", len(lines))
	}
	top := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, cmd := range []string{"make demo", "make test"} {
		if !strings.Contains(top, cmd) {
			t.Errorf("README.md does not show %q in its first 40 lines", cmd)
		}
	}
}

// markdownFiles lists README.md, CONTRIBUTING.md and docs/**/*.md, relative
// to the root, leaving out docs/pending/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && filepath.ToSlash(rel) == "docs/pending" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestMarkdownLinks: every relative link points at a file of the repository
// and, when it names an anchor of a Markdown file, at one of its headings.
func TestMarkdownLinks(t *testing.T) {
	t.Parallel()
	anchors := map[string]map[string]bool{} // by file, relative to the root
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		anchors[rel] = headingAnchors(string(src))
		return anchors[rel]
	}
	for _, file := range markdownFiles(t) {
		src, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, l := range links(string(src)) {
			if problem := checkLink(file, l.target, anchorsOf); problem != "" {
				t.Errorf("%s:%d: link %q %s", file, l.line, l.target, problem)
			}
		}
	}
}

// checkLink says what is wrong with one link of file, or "".
func checkLink(file, target string, anchorsOf func(string) map[string]bool) string {
	if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	rel := file
	if path != "" {
		rel = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if strings.HasPrefix(rel, "..") || filepath.IsAbs(path) {
			return "leaves the repository"
		}
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			return "points at no file"
		}
	}
	if anchor == "" || !strings.HasSuffix(rel, ".md") {
		return ""
	}
	if !anchorsOf(rel)[anchor] {
		return "points at no heading of " + filepath.ToSlash(rel)
	}
	return ""
}

type link struct {
	target string
	line   int
}

var (
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
)

// links returns the inline links of a Markdown text, outside code blocks and
// code spans.
func links(src string) []link {
	var out []link
	for i, line := range strings.Split(prose(src), "\n") {
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// prose blanks a Markdown text's fenced code blocks and empties its code
// spans (which may run over a line break), keeping every line where it was.
func prose(src string) string {
	lines := strings.Split(src, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			lines[i] = ""
		}
	}
	return codeSpan.ReplaceAllStringFunc(strings.Join(lines, "\n"), func(span string) string {
		return "``" + strings.Repeat("\n", strings.Count(span, "\n"))
	})
}

var (
	headingLine = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdLink      = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// headingAnchors returns the anchors GitHub gives a Markdown text's headings:
// each heading's slug, and slug-1, slug-2, … for repeats.
func headingAnchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// slug is GitHub's anchor for a heading's text: links reduced to their text,
// lower case, every character but letters, digits, '-', '_' and spaces
// dropped, spaces turned into '-'.
func slug(heading string) string {
	heading = mdLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestArchitectureMapsEveryPackage: every Go package of the module has a row
// in the package map of docs/architecture.md (its directory, in backquotes,
// with a trailing slash).
func TestArchitectureMapsEveryPackage(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(root, "docs/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]bool{}
	for _, rel := range sourceFiles(t) {
		packages[path.Dir(rel)] = true
	}
	for dir := range packages {
		if dir != "." && !strings.Contains(string(page), "`"+dir+"/`") {
			t.Errorf("package %s/ has no row in the package map of docs/architecture.md", dir)
		}
	}
}
