// Package migrations holds snapq's numbered SQL schema files, embedded so the
// api binary can apply them at start-up or with `api migrate`.
package migrations

import "embed"

// FS holds every *.sql file; they are applied in lexical order.
//
//go:embed *.sql
var FS embed.FS
