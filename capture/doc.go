// Package capture turns a URL into screenshots with one long-lived headless Chromium driven
// over the DevTools protocol (go-rod). It is snapq's only browser code and imports nothing
// else of the project: jobs/ hands it a validated Request and gets back images and facts
// (HTTP status, final URL, title, page height) or a classified *Error whose Code is part of
// the public API.
//
// Why it exists as its own package:
//
//   - Isolation without paying for a renderer per job. Each capture slot keeps one tab in its
//     own browser context for many jobs and restores a clean slate between them (about:blank,
//     the context's cookies, every touched origin's storage, no HTTP cache, no emulation).
//     A fresh incognito context per page ran at 0.32× the speed of a reused tab on two cores;
//     a context per long-lived tab keeps ~0.70× and avoids a measured freeze of concurrent
//     captures in tabs sharing a context. A tab that fails, times out or wears out
//     (Config.TabRecycleAfter) is thrown away with its context.
//   - Chromium's sharp edges in one place: empty WebP images above 16,383 px and empty JPEGs
//     from 65,535 px reported as success, renderer crashes that would otherwise hang a call
//     until its deadline, net::ERR_* text as the only navigation error signal, error statuses
//     with empty bodies reported as navigation failures. Every image is checked (non-empty,
//     right pixel size) before it is returned.
//   - Screenshot modes (docs/architecture.md: "Segments, not one giant image", and
//     screenshot.mode in web/openapi.json): segments cut without scrolling so fixed headers appear once,
//     captured in as few Chromium calls as possible and cut in Go (internal/pngcut).
//   - Targets that are not pages (download.go, nativedl.go, pdf.go): a PDF or a download is
//     taken from the main document's response inside the page's own navigation (downloaded by
//     a launched Chromium into the tab's own directory; paused by Fetch at the response stage
//     in a remote one), so its bytes come through the context's egress proxy like everything else; a
//     PDF's text is read with page markers (internal/pdftext, in a limited child process),
//     other text and JSON bodies are returned as is.
//   - A time budget rather than a cliff: Request.Timeout bounds the navigation, waits and
//     actions; a page that answered but is not ready by then is captured as it is
//     (Result.Partial) within CaptureGrace.
//   - Real pages, not fixtures (docs/api/capture.md): consent banners hidden or accepted
//     (consent.go), app shells whose inner scroller holds the page and vh-sized heroes fitted
//     before a full or segment capture and restored after (fit.go), and a quality verdict on
//     every capture — blank, still loading, failed images or fonts, a bot-check page — with
//     one retry after escalated waits and challenge_blocked for a challenge that does not
//     clear (quality.go).
//   - A supervised browser: restarted when it dies, recycled after
//     Config.BrowserRecycleAfter jobs, never downloaded (Debian's chromium or a remote CDP
//     endpoint), with every call bound to the job's context.
//
// A job runs as a sequence of phases (job.go): navigate, wait, prepare, actions, inspect,
// quality, outputs. The pure codecs, which need no browser, live in internal packages with their own
// tests: internal/pngcut (cutting a PNG band into segments), internal/markdown (HTML to
// Markdown) and internal/pdftext (a PDF's pages, title and text). The two that parse HTML
// (the Markdown conversion and charset decoding) are reached only through Config.Markup
// (markup.go), filled in by cmd/worker with capture/markup's Codec, so that the packages
// that import capture's types (jobs and up) do not depend on an HTML parser.
package capture
