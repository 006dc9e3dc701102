package jobs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// errorsPage is where failure codes are documented.
const errorsPage = "../docs/api/errors.md"

// TestEveryFailureCodeDocumented holds the failure-code table of docs/api/errors.md to the
// code: every job failure code (capture's Code* constants and jobs' in errors.go) has a row
// saying whether it is retried.
func TestEveryFailureCodeDocumented(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(errorsPage)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "\n## Failure codes")
	if !ok {
		t.Fatalf("%s has no Failure codes section", errorsPage)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	files, _ := filepath.Glob("../capture/*.go")
	files = append(files, "errors.go")
	codes := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") {
				return true
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			code, _ := strconv.Unquote(lit.Value)
			codes++
			if !strings.Contains(table, "| `"+code+"` |") {
				t.Errorf("%s (%s in %s) has no row in the failure-code table of %s", code, vs.Names[0].Name, f, errorsPage)
			}
			return true
		})
	}
	if codes < 30 {
		t.Errorf("found only %d codes; is the parse right?", codes)
	}
}
