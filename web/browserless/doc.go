// Package browserless maps the request bodies of Browserless's HTTP API
// (/content, /screenshot, /pdf: the v2 fields, with the v1 spellings clients
// still send) onto one snapq capture target, the batch API's own
// jobs.TargetInput, or says which field snapq refuses and why.
//
// It exists so that agent frameworks that already speak Browserless can use
// snapq unchanged, while everything they ask for goes through snapq's one
// options type and its validation: no second set of capture options. The
// contract is Browserless's published JSON Schemas
// (build/routes/chromium/http/<route>.post.body.json in the npm package
// @browserless.io/browserless 2.42.0), which reject unknown properties;
// so does this package.
package browserless
