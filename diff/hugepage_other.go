//go:build !linux

package diff

// adviseHugePages does nothing outside Linux (hugepage_linux.go).
func adviseHugePages([]byte) {}
