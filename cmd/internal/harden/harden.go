// Package harden makes the snapq binaries harder to read from beside them.
//
// The worker's environment and memory hold every credential it was given
// (SNAPQ_SECRET_KEY, the database URL, S3 keys), and the worker shares its
// uid with the Chromium it starts whenever it is not root (every container
// image): without this, a process running as that uid — a Chromium browser
// process taken over through a sandbox escape — reads them from
// /proc/<worker>/environ or /proc/<worker>/mem, or attaches a debugger.
package harden

// NotDumpable marks this process not dumpable (Linux: prctl PR_SET_DUMPABLE
// 0): its /proc/<pid> files then belong to root, so processes of the same
// uid without CAP_SYS_PTRACE can neither read its environ, memory or open
// files nor ptrace it, and it writes no core dump. Processes it starts are
// dumpable again after their exec. A no-op on other systems.
func NotDumpable() error { return notDumpable() }
