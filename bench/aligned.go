package main

import (
	"fmt"
	"image"
	"time"

	"github.com/snapq/snapq/diff"
)

// alignedBench measures the aligned comparison of a 1280×30,000 page cut in
// 720 px segments (diff.ComparePages, then the diff image of each segment
// with differences, as the regression comparer does) against the plain pixel
// diff of the same pair segment by segment (diff.Compare with the diff image,
// today's pixel mode), best of runs each, on two pairs: the page with a few
// words changed (content in place), and the same with a 37 px block inserted
// at y = 500 (everything below shifted).
func alignedBench() error {
	const w, h, seg = 1280, 30000, 720
	a, _ := pageImages(w, h)
	changed := image.NewRGBA(a.Rect)
	copy(changed.Pix, a.Pix)
	for _, y := range []int{3000, 15000, 27000} {
		clearRect(changed, image.Rect(400, y+96, 520, y+112))
	}
	shifted := image.NewRGBA(image.Rect(0, 0, w, h+37))
	copy(shifted.Pix, changed.Pix[:500*changed.Stride])
	fillRect(shifted, image.Rect(0, 500, w, 537), [3]byte{30, 90, 200})
	copy(shifted.Pix[537*shifted.Stride:], changed.Pix[500*changed.Stride:])
	segsA := cutSegments(a, seg)
	opts := diff.DefaultOptions()
	for _, c := range []struct {
		name string
		b    *image.RGBA
		runs int // the pixel diff of a shifted page takes seconds: once is enough
	}{{"words changed in place", changed, 3}, {"37 px inserted at y=500", shifted, 1}} {
		runs := c.runs
		segsB := cutSegments(c.b, seg)
		var bestPixel, bestAligned, bestManifest time.Duration
		var failedPixel, failedAligned, decoded int
		// The manifests a capture records (row hashes), made outside the timing.
		manA, manB := manifestsOf(segsA), manifestsOf(segsB)
		for r := range runs {
			steps := []func() error{
				func() error {
					start := time.Now()
					failed := 0
					for i := range min(len(segsA), len(segsB)) {
						res, err := diff.Compare(segsA[i], segsB[i], opts)
						if err != nil {
							return err
						}
						if res.DiffPixels > 0 || res.SizeMismatch {
							failed++
						}
					}
					bestPixel, failedPixel = minDur(bestPixel, time.Since(start)), failed
					return nil
				},
				func() error {
					start := time.Now()
					res, err := diff.ComparePages(segsA, segsB, diff.PageOptions{Options: opts})
					if err != nil {
						return err
					}
					failed := 0
					for i, s := range res.Segments {
						if s.DiffPixels > 0 {
							res.SegmentDiff(i)
							failed++
						}
					}
					bestAligned, failedAligned = minDur(bestAligned, time.Since(start)), failed
					return nil
				},
			}
			steps = append(steps, func() error {
				start := time.Now()
				res, err := diff.ComparePageSegments(manA, manB, diff.PageOptions{Options: opts})
				if err != nil {
					return err
				}
				for i, s := range res.Segments {
					if s.DiffPixels > 0 {
						if _, err := res.RenderSegmentDiff(i); err != nil {
							return err
						}
					}
				}
				bestManifest, decoded = minDur(bestManifest, time.Since(start)), res.Decoded()
				return nil
			})
			if r%2 == 1 {
				steps[0], steps[1] = steps[1], steps[0]
			}
			for _, s := range steps {
				if err := s(); err != nil {
					return fmt.Errorf("aligned bench: %w", err)
				}
			}
		}
		fmt.Printf("bench: diff aligned/pixel = %.2f (1280x30000 page, %s: aligned %.0f ms, %d segments differ; pixel %.0f ms, %d differ; target <= 1.5; best of %d)\n",
			bestAligned.Seconds()/bestPixel.Seconds(), c.name, bestAligned.Seconds()*1000, failedAligned,
			bestPixel.Seconds()*1000, failedPixel, runs)
		fmt.Printf("bench: diff aligned-from-manifests/pixel = %.3f (1280x30000 page, %s: %.0f ms, %d of %d segments decoded (decoding not timed: in-memory images); best of %d)\n",
			bestManifest.Seconds()/bestPixel.Seconds(), c.name, bestManifest.Seconds()*1000, decoded, len(segsA)+len(segsB), runs)
	}
	return nil
}

// manifestsOf describes segments as a capture records them (diff.RowHashes).
func manifestsOf(segs []image.Image) []diff.PageSegment {
	out := make([]diff.PageSegment, len(segs))
	for i, img := range segs {
		sigs, exact := diff.RowHashes(img)
		sz := img.Bounds().Size()
		out[i] = diff.PageSegment{Width: sz.X, Height: sz.Y, Sigs: sigs, Exact: exact,
			Load: func() (image.Image, error) { return img, nil }}
	}
	return out
}

// cutSegments cuts img into seg px high sub-images (the last one shorter).
func cutSegments(img *image.RGBA, seg int) []image.Image {
	var out []image.Image
	for y := 0; y < img.Rect.Dy(); y += seg {
		out = append(out, img.SubImage(image.Rect(0, y, img.Rect.Dx(), min(y+seg, img.Rect.Dy()))))
	}
	return out
}
