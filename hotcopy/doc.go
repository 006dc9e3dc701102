// Package hotcopy keeps, for a minute, the bytes of a synchronous capture's
// small artifacts in Redis, so the api answers the caller waiting for them
// (POST /v1/capture with a bytes Accept, the Browserless-compatible doors,
// MCP) without reading back from object storage what a worker has just
// written there.
//
// The bucket stays the record: every artifact is uploaded and recorded in
// Postgres first, and a copy is only ever the exact bytes of the object of
// the same key (an attempt's keys are its own, a content key is its bytes'
// hash: no key is rewritten with other bytes). A copy that is missing,
// expired or of another size means a read from the bucket.
package hotcopy
