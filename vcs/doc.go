// Package vcs reports a visual-regression run to the code host of the
// pull request it checks: a commit status (pending, then success or
// failure with a short summary and a link to the run) and one comment on
// the pull request (GitHub) or merge request (GitLab), edited in place on
// every later run rather than posted again.
//
// It speaks the hosts' documented REST APIs only and is a leaf: the caller
// gives it an *http.Client (in snapq, the egress guard's, so a suite cannot
// point its API base URL at an internal address), decides when to call, and
// keeps the comment id between calls. Errors a retry cannot fix (a 4xx other
// than 408 and 429: a bad token, a repository that does not exist) match
// ErrRejected; the others are transient.
package vcs
