// Package markdown converts a page's serialized HTML to Markdown, in Go, for capture's
// markdown output.
//
// Why it exists: the conversion is a pure function of an HTML string (readability's article
// extraction, a coverage gate that falls back to the whole document on portal and list
// pages, pruning of trailing "related articles" link blocks, data: image placeholders, then
// html-to-markdown with CommonMark and GFM tables) and needs no browser. Keeping it out of
// capture gives its heuristics their own fast unit tests and keeps the HTML-walking helpers
// out of the package that drives Chromium. capture reads the DOM and the visible text's
// length from the page and calls Convert; a download's Markdown is only capped (CapRunes).
package markdown
