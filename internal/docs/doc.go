// Package docs holds no code: its tests keep the manual honest. They run in
// `make test` with the rest and need no services.
//
//   - Every SNAPQ_* variable a binary or an internal package reads has a row in
//     docs/operating/configuration.md.
//   - Every relative link of README.md, CONTRIBUTING.md and docs/ (docs/pending/
//     excepted: drafts waiting to be folded in) points at a file that exists
//     and, for a Markdown file, at a heading it has (GitHub's anchors).
//   - Every Go package has a row in the package map of docs/architecture.md.
//   - README.md stays the front door: at most 300 lines, `make demo` and
//     `make test` in its first 40.
//
// That every route of the router is in web/openapi.json is checked by web's
// TestOpenAPICoversRouter, next to the router.
package docs
