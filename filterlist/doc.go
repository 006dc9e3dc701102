// Package filterlist blocks ads, trackers and chat widgets the way an ad
// blocker does: by maintained filter lists (EasyList, EasyPrivacy) in
// Adblock Plus syntax, matched by AdGuard's urlfilter engine. Network rules
// say which requests a page must not make; element-hiding (cosmetic) rules
// say which of its elements to hide. The lists ship with snapq, gzipped
// (lists/README.md says from which package and under which license), and a
// deployment can load its own (SNAPQ_FILTER_LISTS). An Engine is built once
// per worker and shared by its tabs: matching is read-only after Load.
//
// It is a leaf: capture declares the interface it needs and cmd/worker
// wires an Engine in.
package filterlist
