package browserless

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/snapq/snapq/jobs"
)

// The small decoders every field mapping uses. Each records its own error
// naming the field and reports whether the value was usable.

// decode unmarshals raw into dst, or records that field is not a what.
func (p *parser) decode(field string, raw json.RawMessage, dst any, what string) bool {
	if err := strictUnmarshal(raw, dst); err != nil {
		p.errs.Add("invalid_field", field, "must be "+what)
		return false
	}
	return true
}

// number decodes a JSON number.
func (p *parser) number(field string, raw json.RawMessage) (float64, bool) {
	var n json.Number
	if !p.decode(field, raw, &n, "a number") {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil {
		p.errs.Add("invalid_field", field, "must be a number")
		return 0, false
	}
	return f, true
}

func (p *parser) str(field string, raw json.RawMessage) (string, bool) {
	var s string
	return s, p.decode(field, raw, &s, "a string")
}

func (p *parser) boolean(field string, raw json.RawMessage) (bool, bool) {
	var b bool
	return b, p.decode(field, raw, &b, "true or false")
}

func (p *parser) strings(field string, raw json.RawMessage) ([]string, bool) {
	var l []string
	return l, p.decode(field, raw, &l, "a list of strings")
}

// object decodes a JSON object whose keys must be in known (a key mapped
// to a non-empty reason is refused with it); nil when it is not usable.
func (p *parser) object(field string, raw json.RawMessage, known map[string]string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if !p.decode(field, raw, &m, "an object") || m == nil {
		if m == nil && string(raw) == "null" {
			return map[string]json.RawMessage{}
		}
		return nil
	}
	ok := true
	for _, k := range sortedKeys(m) {
		reason, known := known[k]
		switch {
		case !known:
			p.errs.Add("unknown_field", field+"."+k, fmt.Sprintf("Browserless's %s has no field %q", field, k))
			ok = false
		case reason != "":
			p.errs.Add("refused_field", field+"."+k, reason)
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return m
}

// keys builds the known map of object from the accepted key names.
func keys(names ...string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = ""
	}
	return m
}

// with adds refused keys and their reasons to a known map.
func with(m map[string]string, refusedKeys ...string) map[string]string {
	for i := 0; i+1 < len(refusedKeys); i += 2 {
		m[refusedKeys[i]] = refusedKeys[i+1]
	}
	return m
}

// from records that the snapq field came from the Browserless field.
func (p *parser) from(snapq, bl string) { p.req.Origin[snapq] = bl }

func (p *parser) wait() *jobs.WaitInput {
	if p.o.Wait == nil {
		p.o.Wait = &jobs.WaitInput{}
	}
	return p.o.Wait
}

func (p *parser) screenshot() *jobs.ScreenshotInput {
	if p.o.Screenshot == nil {
		p.o.Screenshot = &jobs.ScreenshotInput{}
	}
	return p.o.Screenshot
}

func (p *parser) emulate() *jobs.EmulateInput {
	if p.o.Emulate == nil {
		p.o.Emulate = &jobs.EmulateInput{}
	}
	return p.o.Emulate
}

func (p *parser) pdf() *jobs.PDFInput {
	if p.o.PDF == nil {
		p.o.PDF = &jobs.PDFInput{}
	}
	return p.o.PDF
}

// lifecycle maps Puppeteer's lifecycle events (and the names clients send
// as waitForEvent) onto wait.until.
var lifecycle = map[string]string{
	"load":             "load",
	"domcontentloaded": "domcontentloaded",
	"networkidle0":     "networkidle",
	"networkidle2":     "networkidle",
	"networkidle":      "networkidle",
}

// until maps one event name, or records that snapq cannot wait for it.
func (p *parser) until(field, event string) {
	u, ok := lifecycle[strings.ToLower(event)]
	if !ok {
		p.errs.Add("unsupported_value", field, fmt.Sprintf("snapq waits for load, domcontentloaded or networkidle0/2, not %q", event))
		return
	}
	p.wait().Until = &u
	p.from("options.wait.until", field)
}
