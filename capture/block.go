package capture

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Resource types Block.ResourceTypes accepts.
const (
	ResourceImage      = "image"
	ResourceFont       = "font"
	ResourceMedia      = "media"
	ResourceStylesheet = "stylesheet"
)

// Block limits.
const (
	MaxBlockPatterns      = 50
	MaxBlockPatternLength = 256
)

// resourceTypes maps Block.ResourceTypes values to CDP resource types.
var resourceTypes = map[string]proto.NetworkResourceType{
	ResourceImage:      proto.NetworkResourceTypeImage,
	ResourceFont:       proto.NetworkResourceTypeFont,
	ResourceMedia:      proto.NetworkResourceTypeMedia,
	ResourceStylesheet: proto.NetworkResourceTypeStylesheet,
}

// ResourceTypes lists the accepted Block.ResourceTypes values.
func ResourceTypes() []string {
	return []string{ResourceImage, ResourceFont, ResourceMedia, ResourceStylesheet}
}

// Block says which sub-resources a job's page must not load. The zero value blocks nothing.
type Block struct {
	// ResourceTypes are failed (net::ERR_BLOCKED_BY_CLIENT) by Fetch interception limited to
	// these types, so other requests are never paused.
	ResourceTypes []string `json:"resource_types"`
	// URLPatterns go to Network.setBlockedURLs ('*' is a wildcard).
	URLPatterns []string `json:"url_patterns,omitempty"`
	// Ads, Trackers, ChatWidgets, Social and CookieBanners block by the
	// worker's filter lists (filter.go): EasyList, EasyPrivacy, snapq's chat
	// list, AdGuard's Social Media and Cookie Notices filters.
	Ads           bool `json:"ads,omitempty"`
	Trackers      bool `json:"trackers,omitempty"`
	ChatWidgets   bool `json:"chat_widgets,omitempty"`
	Social        bool `json:"social,omitempty"`
	CookieBanners bool `json:"cookie_banners,omitempty"`
}

// applyBlock puts req's blocking in force on the tab before the navigation. The tab is reused
// across jobs, so this always sets the state the job wants (and reset clears it after a job):
// a job never inherits the previous job's blocking.
func (t *tab) applyBlock(p *rod.Page, b Block) error {
	patterns := b.URLPatterns
	if patterns == nil {
		patterns = []string{}
	}
	if t.blockedURLs == nil || !slices.Equal(patterns, t.blockedURLs) {
		if err := (proto.NetworkSetBlockedURLs{Urls: patterns}).Call(p); err != nil {
			t.blockedURLs = nil
			return fmt.Errorf("set blocked URLs: %w", err)
		}
		t.blockedURLs = slices.Clone(patterns)
	}
	cats := b.Categories()
	if len(cats) > 0 && t.inst.cfg.Filter == nil {
		return newError(CodeInternal, false, nil, "blocking %v needs filter lists, and this worker loaded none (SNAPQ_FILTER_LISTS=off)", cats)
	}
	for _, rt := range b.ResourceTypes {
		if _, ok := resourceTypes[rt]; !ok {
			return newError(CodeInternal, false, nil, "unknown resource type %q", rt)
		}
	}
	t.setBlockState(b.ResourceTypes, cats) // filter.go
	if t.fetchOn && slices.Equal(b.ResourceTypes, t.fetchTypes) && slices.Equal(cats, t.fetchCats) {
		return nil
	}
	return t.enableFetch(p, b.ResourceTypes, cats)
}

// enableFetch puts the Fetch patterns of a job's blocking in force. A remote browser's tab
// always pauses Document responses, so that a PDF or download target can be taken
// (download.go; a launched one downloads them: nativedl.go); blocked types are paused, and
// failed, at the request stage. With filter categories every request is paused there, and
// matched (filter.go). Without any pattern interception is off.
func (t *tab) enableFetch(p *rod.Page, types, cats []string) error {
	var pats []*proto.FetchRequestPattern
	if t.dlDir == "" {
		pats = append(pats, documentPattern)
	}
	if len(cats) > 0 {
		pats = append(pats, &proto.FetchRequestPattern{URLPattern: "*", RequestStage: proto.FetchRequestStageRequest})
	} else {
		for _, rt := range types {
			pats = append(pats, &proto.FetchRequestPattern{URLPattern: "*", ResourceType: resourceTypes[rt], RequestStage: proto.FetchRequestStageRequest})
		}
	}
	if len(pats) == 0 {
		return t.disableFetch(p) // Fetch.enable without patterns would pause every request
	}
	// Fetch.enable replaces the patterns of an earlier call.
	t.fetchOn = true // set first: a failed call may still have enabled it
	t.fetchTypes, t.fetchCats = nil, nil
	if err := (proto.FetchEnable{Patterns: pats}).Call(p); err != nil {
		t.fetchOn = false
		return fmt.Errorf("enable request interception: %w", err)
	}
	t.fetchTypes, t.fetchCats = slices.Clone(types), cats
	return nil
}

// disableFetch turns request interception off when it is on.
func (t *tab) disableFetch(p *rod.Page) error {
	if !t.fetchOn {
		return nil
	}
	if err := (proto.FetchDisable{}).Call(p); err != nil {
		return fmt.Errorf("disable request interception: %w", err)
	}
	t.fetchOn, t.fetchTypes, t.fetchCats = false, nil, nil
	return nil
}

// clearBlock lifts every block on the tab (at the end of a job, from reset). A remote
// browser's interception of Document responses alone stays on for the next job.
func (t *tab) clearBlock(p *rod.Page) error {
	t.setBlockState(nil, nil)
	if len(t.fetchTypes) > 0 || len(t.fetchCats) > 0 {
		if err := t.disableFetch(p); err != nil {
			return err
		}
	}
	if len(t.blockedURLs) > 0 {
		if err := (proto.NetworkSetBlockedURLs{Urls: []string{}}).Call(p); err != nil {
			return fmt.Errorf("clear blocked URLs: %w", err)
		}
		t.blockedURLs = []string{}
	}
	return nil
}

// failPaused fails one request intercepted at the request stage (requestPaused decides which).
// It runs off the event loop.
func (t *tab) failPaused(id proto.FetchRequestID) {
	ctx, cancel := context.WithTimeout(t.ctx, cleanTimeout)
	defer cancel()
	err := proto.FetchFailRequest{RequestID: id, ErrorReason: proto.NetworkErrorReasonBlockedByClient}.Call(t.page.Context(ctx))
	if err != nil {
		t.inst.log.Debug("fail intercepted request", "err", err)
	}
}
