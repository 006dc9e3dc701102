// Package discover finds the pages a batch or a suite captures when the user names a
// site rather than its pages: from the site's sitemaps (or robots.txt), or by following
// its links. It is one home for discovery, apart from jobs, because discovery reads
// untrusted documents (sitemap XML, page HTML) over the network and jobs must stay the
// domain core: jobs declares what it consumes (jobs.SitemapPages) and cmd/ wires this
// package's Reader in.
//
//   - sitemap.go: Reader reads urlsets, sitemap indexes (gzip too) and robots.txt, every
//     read bounded in files, bytes, depth, entries and time.
//   - pages.go: ReadSitemap turns a sitemap into the unique loadable page URLs that pass
//     include/exclude, at most a limit (a sitemap batch, a suite's discover.sitemap).
//   - page.go, linkcrawl.go: FetchPage and CrawlLinks, a suite's discovery by crawl:
//     plain GETs, breadth first, HTML links tokenised with bounded buffers, capped per
//     host; no script runs.
//
// Every request goes through the http.Client the caller gives (the egress guard's), so a
// sitemap or page is read under the same destination policy as a capture; this package
// never dials anything itself. A crawl batch's frontier (jobs.Crawl.Frontier) is the
// batch's own rule and stays with jobs: the store applies it when a crawled page's job
// completes; CrawlLinks follows the same rule server-side.
package discover
