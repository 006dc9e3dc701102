package browserless

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/snapq/snapq/jobs"
)

// The mappings of the fields of /screenshot and /pdf only.

// screenshotOptions: Puppeteer's ScreenshotOptions.
func (p *parser) screenshotOptions(field string, raw json.RawMessage) {
	m := p.object(field, raw, with(keys("type", "quality", "fullPage", "omitBackground", "encoding",
		"optimizeForSpeed", "fromSurface", "captureBeyondViewport"),
		"clip", "snapq captures the viewport, the full page or one element (selector), not a clip rectangle",
		"path", "snapq answers the image; it writes no file on the server"))
	if m == nil {
		return
	}
	p.imageType(field, m)
	if v, ok := m["quality"]; ok {
		if n, ok := p.number(field+".quality", v); ok {
			p.screenshot().Quality = &n
			p.from("options.screenshot.quality", field+".quality")
		}
	}
	if v, ok := m["fullPage"]; ok {
		if b, ok := p.boolean(field+".fullPage", v); ok && b {
			p.screenshot().Mode = ptr("full")
			p.from("options.screenshot.mode", field+".fullPage")
		}
	}
	p.refuseTrue(field+".omitBackground", m["omitBackground"], "snapq captures pages on their own background")
	if v, ok := m["encoding"]; ok {
		if s, ok := p.str(field+".encoding", v); ok && s != "binary" {
			p.errs.Add("unsupported_value", field+".encoding", "snapq answers binary images only")
		}
	}
	for _, k := range []string{"optimizeForSpeed", "fromSurface", "captureBeyondViewport"} {
		if v, ok := m[k]; ok {
			p.boolean(field+"."+k, v) // hints for Puppeteer's encoder: snapq's capture is its own
		}
	}
}

// imageType maps options.type onto the answer's format.
func (p *parser) imageType(field string, m map[string]json.RawMessage) {
	v, ok := m["type"]
	if !ok {
		return
	}
	s, ok := p.str(field+".type", v)
	if !ok {
		return
	}
	switch s {
	case "png", "jpeg", "webp":
		p.req.Format = s
	default:
		p.errs.Add("invalid_field", field+".type", "must be png, jpeg or webp")
	}
}

// refuseTrue records a refusal when raw is true.
func (p *parser) refuseTrue(field string, raw json.RawMessage, why string) {
	if raw == nil {
		return
	}
	if b, ok := p.boolean(field, raw); ok && b {
		p.errs.Add("unsupported_value", field, why)
	}
}

func (p *parser) selector(field string, raw json.RawMessage) {
	if s, ok := p.str(field, raw); ok && s != "" {
		p.screenshot().Selector = &s
		p.from("options.screenshot.selector", field)
	}
}

func (p *parser) scrollPage(field string, raw json.RawMessage) {
	if b, ok := p.boolean(field, raw); ok && b {
		p.o.Scroll = &jobs.ScrollInput{Enabled: ptr(true)}
		p.from("options.scroll", field)
	}
}

// pdfOptions: Puppeteer's PDFOptions, the ones snapq's pdf output has.
func (p *parser) pdfOptions(field string, raw json.RawMessage) {
	const tmpl = "snapq prints no header or footer templates"
	m := p.object(field, raw, with(keys("format", "landscape", "printBackground", "scale", "pageRanges", "preferCSSPageSize", "margin"),
		"displayHeaderFooter", tmpl, "headerTemplate", tmpl, "footerTemplate", tmpl,
		"width", "snapq prints on named paper sizes (format)", "height", "snapq prints on named paper sizes (format)",
		"path", "snapq answers the PDF; it writes no file on the server", "omitBackground", "snapq prints pages on their own background",
		"tagged", "not supported", "outline", "not supported", "timeout", "the navigation's timeout (gotoOptions.timeout) bounds the whole capture",
		"waitForFonts", "snapq waits for fonts with POST /v1/capture's options.wait.fonts"))
	if m == nil {
		return
	}
	pdf := p.pdf()
	if v, ok := m["format"]; ok {
		if s, ok := p.str(field+".format", v); ok {
			pdf.Paper = ptr(strings.ToLower(s))
			p.from("options.pdf.paper", field+".format")
		}
	}
	for name, dst := range map[string]**bool{"landscape": &pdf.Landscape, "printBackground": &pdf.PrintBackground, "preferCSSPageSize": &pdf.PreferCSSPageSize} {
		if v, ok := m[name]; ok {
			if b, ok := p.boolean(field+"."+name, v); ok {
				*dst = &b
			}
		}
	}
	if v, ok := m["scale"]; ok {
		if n, ok := p.number(field+".scale", v); ok {
			pdf.Scale = &n
			p.from("options.pdf.scale", field+".scale")
		}
	}
	if v, ok := m["pageRanges"]; ok {
		if s, ok := p.str(field+".pageRanges", v); ok && s != "" {
			pdf.PageRanges = &s
			p.from("options.pdf.page_ranges", field+".pageRanges")
		}
	}
	if v, ok := m["margin"]; ok {
		p.margin(field+".margin", v)
	}
}

// margin: snapq prints one margin on every side; the four must be equal.
func (p *parser) margin(field string, raw json.RawMessage) {
	m := p.object(field, raw, keys("top", "right", "bottom", "left"))
	if m == nil {
		return
	}
	mm := map[float64]bool{}
	for _, side := range []string{"top", "right", "bottom", "left"} {
		v, ok := m[side]
		if !ok {
			mm[0] = true
			continue
		}
		n, ok := lengthMM(v)
		if !ok {
			p.errs.Add("invalid_field", field+"."+side, "must be a length: a number of pixels, or a string in px, in, cm or mm")
			return
		}
		mm[n] = true
	}
	if len(mm) != 1 {
		p.errs.Add("unsupported_value", field, "snapq prints the same margin on every side")
		return
	}
	for n := range mm {
		p.pdf().MarginMM = &n
	}
	p.from("options.pdf.margin_mm", field)
}

// lengthMM converts a CSS length of Puppeteer's (a number of px, or a
// string with px, in, cm or mm) to millimetres.
func lengthMM(raw json.RawMessage) (float64, bool) {
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n * 25.4 / 96, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	s = strings.TrimSpace(strings.ToLower(s))
	for unit, mm := range map[string]float64{"px": 25.4 / 96, "in": 25.4, "cm": 10, "mm": 1} {
		if strings.HasSuffix(s, unit) {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, unit)), 64)
			return v * mm, err == nil
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * 25.4 / 96, err == nil
}

func sortStrings(s []string) { sort.Strings(s) }
