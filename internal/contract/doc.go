// Package contract holds the API to its description: it checks HTTP requests
// and responses against the OpenAPI document (web/openapi.json) with
// kin-openapi's openapi3filter, so a response that drifts from the document
// fails the test that saw it.
//
// Transport is the http.RoundTripper the e2e stack's client uses: every
// request it sends to the api and every answer is checked, and the
// violations are collected for the test to report.
package contract
