// Package diff compares two screenshots pixel by pixel for snapq's visual
// regression runs: it counts the pixels that differ, tells anti-aliasing
// apart from real changes, and renders a diff image for people to review.
//
// It exists as a leaf package (standard library only) so that the worker,
// the API and the bench can all use the same comparison, and so the
// algorithm can be unit-tested on synthetic images without any service.
//
// # Algorithm
//
// Compare is a port of mapbox/pixelmatch 7.1 (ISC licence):
//
//   - Colour distance is the squared distance in the YIQ colour space
//     (Kotsarenko & Ramos, "Measuring perceived color difference using YIQ
//     NTSC transmission color space in mobile applications"), with weights
//     0.5053·Y² + 0.299·I² + 0.1957·Q², computed from the channel
//     differences in pixelmatch 7's order of operations, so its rounding and
//     its counts are the same. Semi-transparent pixels are first blended
//     with white (pixelmatch 6), or with Options.Checkerboard over pixelmatch
//     7's checkerboard. The largest possible distance is 35215, so a pixel
//     differs when its distance exceeds 35215·t², t being Options.Threshold.
//     pixelmatch 7.1.0's published counts on its own test fixtures, and
//     its expected diff images byte for byte, are asserted in the tests
//     (testdata/pixelmatch).
//   - A differing pixel is anti-aliasing (Vysniauskas 2009, "Anti-aliased
//     pixel and intensity slope detector") when, in either image, at most two
//     of its neighbours have its brightness (pixels on the edge count one
//     more), it has both darker and brighter neighbours, and the darkest or
//     the brightest neighbour has three or more neighbours of exactly its
//     colour in both images. Such pixels are counted in AAPixels, not in
//     DiffPixels, unless Options.IncludeAA is set.
//   - The diff image shows differing pixels in red, anti-aliased pixels in
//     yellow, masked pixels in blue, and every other pixel as a faded
//     grayscale copy of the first image (its luma blended with white at
//     opacity 0.1), as pixelmatch does.
//
// Differences from pixelmatch: its options diffColorAlt and diffMask are
// not offered and the fade opacity is fixed at 0.1; the rest is additive:
//
//   - Images of different sizes are compared on the union canvas anchored
//     at their top-left corners: the overlap is compared as above (its size
//     is the image size for neighbour look-ups), every canvas pixel outside
//     one of the images counts as different, and Result.SizeMismatch is set.
//     Nothing panics and no error is returned for a size change.
//   - Options.Mask lists rectangles (canvas coordinates, origin at the top
//     left of both images) that are neither compared nor counted.
//   - Rows whose bytes are equal in both images are skipped with one memory
//     comparison, and in other rows pairs of equal pixels with one 64-bit
//     comparison; this is exact (an equal pixel never differs, and
//     anti-aliasing detection is only run for differing pixels), and makes
//     tall pages with small changes cheap. Opaque pixels whose channels
//     moved by little (squared distance at most 35215·t²/0.2561, the bound
//     of the YIQ form) are below the threshold without floating point;
//     anti-aliasing detection orders opaque neighbours by integer lumas
//     (the weights have eight decimals), which orders them as pixelmatch's
//     floating point does; the faded background of opaque pixels is
//     computed in integers, exact for every colour, and a row equal to the
//     one above is copied. Inside a changed area of one colour (both
//     images uniform over the pixel pair and the pair above) two pixels
//     count at once: each has three neighbours of its colour in both
//     images, so neither is anti-aliasing. Rows are compared in chunks on
//     up to GOMAXPROCS goroutines, the caller's one of them, each with its
//     own counts (the result does not depend on the order). Inputs are read in place when they are *image.NRGBA or
//     opaque *image.RGBA (screenshots decoded from RGBA or RGB PNGs), and
//     converted once otherwise. A cross-check against the plain per-pixel
//     loop keeps every shortcut byte-exact.
//   - Ratio divides by the whole canvas, masked pixels included.
//
// # Options
//
// The zero Options means pixelmatch's defaults: Threshold 0 stands for
// DefaultThreshold (0.1) and anti-aliasing is detected. To ask for an exact
// colour match (threshold 0) set Threshold to ExactThreshold (any negative
// value). DiffImage selects whether the diff image is rendered; it costs one
// NRGBA image of the canvas size (4 bytes per pixel). Result.Release hands
// that memory to the next comparison once the image has been encoded: a
// caller diffing many segments then draws into memory already mapped.
//
// Passes applies the per-image gate: the ratio of differing pixels must not
// exceed the allowed ratio, and a size mismatch never passes.
package diff
