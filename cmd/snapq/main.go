// Command snapq is the command-line client of a snapq api: submit batches
// from files of URLs with a live progress bar and download every artifact,
// follow batches and visual-regression runs, approve runs.
//
//	go install github.com/snapq/snapq/cmd/snapq@latest
//	snapq capture urls.txt --wait --out shots/
//
// The commands live in internal/cli; this is wiring only.
package main

import (
	"os"

	"github.com/snapq/snapq/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
