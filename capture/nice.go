package capture

// Chromium's niceness (Config.Nice). On two cores a batch's renderers and a synchronous
// capture's renderer compete for the same CPU; Linux's scheduler gives a nice-10 process
// about a tenth of the share of a nice-0 one when both want the CPU, and all of it when
// nothing else does. So a batch browser started at a higher niceness costs a batch nothing
// on an idle machine, while the worker, the api and the interactive lane's own browser go
// first when they need the CPU.
//
// The niceness is set on the thread that starts Chromium, just before it does: a child
// inherits its parent's niceness, and so do the zygotes and renderers Chromium forks, with
// no window in which a renderer starts at the worker's. That thread is not given back to
// the Go runtime (its goroutine ends locked to it), since an unprivileged process cannot
// lower a niceness again.

// MaxNice is the highest Config.Nice.
const MaxNice = 19
