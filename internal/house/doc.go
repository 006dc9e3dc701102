// Package house holds no code: its tests check the house rules of CONTRIBUTING.md that a
// parser can check, so review does not have to. They run in `make test` with the rest and
// need no services.
//
//   - No production function (outside _test.go files, bench/, testdata and tests/e2e) is
//     over 60 lines; the few functions not yet split are listed, to be emptied.
//   - One validator idiom: no production function returns the domain's field errors
//     (jobs.FieldError, []jobs.FieldError, jobs.FieldErrors) and none builds them outside
//     jobs/errors.go; validators take errs *jobs.FieldErrors and call errs.Add.
//   - The domain's dependencies (`go list -deps`): jobs pulls in no asynq, cron, egress,
//     queue, sitemap/discover or HTML parser (golang.org/x/net/html); regression no asynq.
package house
