// Package session runs interactive browser sessions for agents: a tab kept on one worker
// for the session's life, driven one command at a time ("open URL", "snapshot",
// "click e21", …) with bounded replies and a live feed of the calls.
//
// Why a package of its own: a job is a fixed list of actions in a fresh tab that ends; a
// session is a conversation with one page. The api side (Service) admits sessions (the
// key's session cap and in-flight budget), hands commands to the owning worker and waits for
// their replies; the worker side (Host) holds the tabs, runs the commands in order from the
// verb table (verbs.go, which also writes `help`), expires idle sessions and reports its
// liveness. They meet through a Bus (Redis, package sessionbus), a Repo (Postgres, package
// store) and the feed (package events).
package session
