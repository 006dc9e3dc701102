// Package pngcut cuts a PNG into horizontal pieces without decoding it to an image.
//
// Why it exists: a segmented screenshot is one tall PNG band from Chromium that has to become
// several PNG files. Decoding the band to an image.Image and re-encoding each piece with
// image/png runs a filter search and a deflate over every pixel; cutting the row stream
// directly skips both and gives the same pixels (BenchmarkCut compares the two paths). It is
// a pure codec with no browser in it, so it lives in its own package with its own tests;
// capture keeps only the call and the decode fallback for layouts Cut does not handle
// (ErrUnsupported).
//
// How: Cut takes a non-interlaced 8-bit RGB or RGBA PNG (what Chromium's captureScreenshot
// emits) and never builds an image.Image nor runs a filter-selection heuristic. The source's IDAT stream is inflated row by row and
// every row is unfiltered (the next row may predict from it), keeping only the previous row.
// Each piece is written as:
//   - the piece's first row re-filtered with filter None (it cannot predict from a row outside
//     the piece), from its unfiltered bytes;
//   - every following row copied with its original filter byte and filtered bytes, which stay
//     valid because the row they predict from is in the same piece, unfiltered identically.
//
// Chromium's fast path (optimizeForSpeed) was observed to emit 8-bit RGB, every row filtered
// Up, zlib level 1, many small IDAT chunks and no ancillary chunk, so pieces use Up too.
//
// Choices:
//   - Input chunk CRCs are verified (~1 ms for a few MB). The source's zlib adler32 is not: the
//     IDAT stream is inflated with a raw flate reader after checking the 2-byte zlib header (saves
//     an adler32 pass over all the raw rows, ~8 ms for 1280x7200 RGB), and inflation stops
//     after the last row a piece needs. Damage still fails (bad deflate data, bad filter byte,
//     too few rows) and the chunk CRCs catch bit flips anywhere in the compressed data. The
//     pieces get a correct adler32 (the zlib writer writes it).
//   - Pieces keep the source's color type (RGBA stays RGBA even when opaque) and its
//     colour-space chunks found before the first IDAT (sRGB, gAMA, cHRM, iCCP), copied
//     verbatim; every other ancillary chunk is dropped.
//   - Pieces are deflated at zlib.BestSpeed: on a 1280x7200 page DefaultCompression made them
//     ~12-25% smaller but took ~3-4x as long, slower than the decode+encode path it replaces.
//   - Inflate and deflate are klauspost/compress's (already in the module graph through
//     minio-go), not the standard library's: BenchmarkCut/chromium/Cut 297 -> 211 ms (median
//     of 4, 1280x7200) with pieces 1% smaller; the cutter took 44% of the worker's CPU in the e2e
//     bench (issue 31).
package pngcut
