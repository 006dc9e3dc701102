// Package authprofile keeps pages behind a login capturable: a named, owned
// auth profile holds a login recipe (or an uploaded Playwright storage state),
// its write-only secrets sealed with AES-GCM (sealer.go), and the storage
// states its logins produced, each a sealed, numbered version. The worker
// seeds a job's fresh browser context with the current version (session.go)
// and, when the page shows it is logged out, one worker fleet-wide runs the
// recipe again under a Redis single-flight lock while the others wait for the
// new version.
//
// Secret values never leave this package except as the text a type step
// enters into the login form: views carry only their names, action logs show
// the step's selector, and every error message is passed through Mask.
package authprofile
