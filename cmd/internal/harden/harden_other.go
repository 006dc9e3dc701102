//go:build !linux

package harden

func notDumpable() error { return nil }
