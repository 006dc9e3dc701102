package web

import (
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

// The api hands its store.Store to the Server as every reader.
var (
	_ BatchReader       = (*store.Store)(nil)
	_ WebhookReader     = (*store.Store)(nil)
	_ regression.Reader = (*store.Store)(nil)
	_ KeyReader         = (*store.Store)(nil)
	_ ArchiveSource     = (*store.Store)(nil)
	_ ThumbnailReader   = (*store.Store)(nil)
	_ StorageCounter    = (*store.Store)(nil)
)
