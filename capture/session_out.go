package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Outputs and tabs of a session: the same screenshot modes and segment rules, PDF printing
// and Markdown/text converters as a job's outputs, taken of the page as it is now.

// Screenshot takes the current page in mode (ModeViewport, ModeFull or ModeSegments, at
// most maxSegments pieces) as PNG images named name.png or name-001.png, ….
func (s *Session) Screenshot(ctx context.Context, name, mode string, maxSegments int) ([]Image, Segments, error) {
	var imgs []Image
	var segs Segments
	err := s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		var h int
		if err := evalJSON(p, `Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)`, &h); err != nil {
			return fmt.Errorf("page height: %w", err)
		}
		req := Request{Name: name, Viewport: s.vp, Screenshot: Screenshot{Mode: mode, Format: FormatPNG,
			MaxSegments: NormalizeMaxSegments(float64(maxSegments))}}
		var err error
		imgs, segs, err = Shoot(ctx, p, req, h, s.b.cfg.CallTimeout)
		return err
	})
	return imgs, segs, err
}

// PDF prints the current page (A4, backgrounds).
func (s *Session) PDF(ctx context.Context, name string) (File, error) {
	var f File
	err := s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		var err error
		f, err = printPDF(ctx, p, Request{Name: name, PDF: PDFOptions{Paper: PaperA4, PrintBackground: true}}, s.b.cfg.CallTimeout)
		f.Name = name + ".pdf"
		return err
	})
	return f, err
}

// Read converts the current page to OutputMarkdown or OutputText, as a job's outputs are.
func (s *Session) Read(ctx context.Context, output string) (string, error) {
	var out string
	err := s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		var loc string
		if err := evalJSON(p, `location.href`, &loc); err != nil {
			return err
		}
		files, err := s.t.pageOutputs(p, Request{Name: "page", Outputs: []string{output}}, &Result{FinalURL: loc})
		if err != nil {
			return err
		}
		if len(files) == 1 {
			out = string(files[0].Data)
		}
		return nil
	})
	return out, err
}

// Eval evaluates expr on the current page and returns its JSON value, capped at limit bytes.
func (s *Session) Eval(ctx context.Context, expr string, limit int) (json.RawMessage, error) {
	var v json.RawMessage
	err := s.call(ctx, func(ctx context.Context, p *rod.Page) error {
		raw, err := evalRaw(p, expr)
		if err != nil {
			return newError(CodeActionFailed, false, nil, "%s", CapMessage(err.Error()))
		}
		v = capEvaluation(0, raw, limit).Value
		return nil
	})
	return v, err
}

// TabInfo is one page of the session's browser context.
type TabInfo struct {
	Index   int
	URL     string
	Title   string
	Current bool
}

// Tabs lists the session's pages: 0 is the session's own, then the popups it opened.
func (s *Session) Tabs(ctx context.Context) ([]TabInfo, error) {
	var out []TabInfo
	err := s.call(ctx, func(ctx context.Context, _ *rod.Page) error {
		ids, infos, err := s.targets(ctx)
		if err != nil {
			return err
		}
		for i, id := range ids {
			cur := id == s.cur || (s.cur == "" && i == 0)
			out = append(out, TabInfo{Index: i, URL: infos[id].URL, Title: infos[id].Title, Current: cur})
		}
		return nil
	})
	return out, err
}

// targets are the ids of the context's pages, the session's own first, and their infos.
func (s *Session) targets(ctx context.Context) ([]proto.TargetTargetID, map[proto.TargetTargetID]*proto.TargetTargetInfo, error) {
	all, err := proto.TargetGetTargets{}.Call(s.inst.rb.Context(ctx))
	if err != nil {
		return nil, nil, fmt.Errorf("list tabs: %w", err)
	}
	ids := []proto.TargetTargetID{s.t.page.TargetID}
	infos := map[proto.TargetTargetID]*proto.TargetTargetInfo{}
	for _, ti := range all.TargetInfos {
		if ti.BrowserContextID != s.t.contextID || ti.Type != proto.TargetTargetInfoTypePage {
			continue
		}
		infos[ti.TargetID] = ti
		if ti.TargetID != s.t.page.TargetID {
			ids = append(ids, ti.TargetID)
		}
	}
	if infos[s.t.page.TargetID] == nil {
		infos[s.t.page.TargetID] = &proto.TargetTargetInfo{}
	}
	return ids, infos, nil
}

// SelectTab makes page i the current one (its refs start with its next snapshot).
func (s *Session) SelectTab(ctx context.Context, i int) error {
	return s.call(ctx, func(ctx context.Context, _ *rod.Page) error {
		ids, _, err := s.targets(ctx)
		if err != nil {
			return err
		}
		if i < 0 || i >= len(ids) {
			return newError(CodeActionFailed, false, nil, "no tab %d; the session has %d (see `tabs`)", i, len(ids))
		}
		s.refs.clear()
		if i == 0 {
			s.cur = ""
			return nil
		}
		id := ids[i]
		if _, ok := s.pages[id]; !ok {
			p, err := s.inst.rb.PageFromTarget(id)
			if err != nil {
				return fmt.Errorf("attach to tab %d: %w", i, err)
			}
			s.pages[id] = p
		}
		s.cur = id
		_ = proto.TargetActivateTarget{TargetID: id}.Call(s.inst.rb.Context(ctx))
		return nil
	})
}

// CloseTab closes popup i (the session's own page, 0, stays); the current page becomes 0
// when it was i.
func (s *Session) CloseTab(ctx context.Context, i int) error {
	return s.call(ctx, func(ctx context.Context, _ *rod.Page) error {
		ids, _, err := s.targets(ctx)
		if err != nil {
			return err
		}
		if i <= 0 || i >= len(ids) {
			return newError(CodeActionFailed, false, nil, "tab %d cannot be closed: popups are 1 to %d (0 is the session's own)", i, len(ids)-1)
		}
		if _, err := (proto.TargetCloseTarget{TargetID: ids[i]}).Call(s.inst.rb.Context(ctx)); err != nil {
			return fmt.Errorf("close tab %d: %w", i, err)
		}
		delete(s.pages, ids[i])
		if s.cur == ids[i] {
			s.cur = ""
			s.refs.clear()
		}
		return nil
	})
}

// PageCount is the number of the session's pages (to tell that an action opened a popup).
func (s *Session) PageCount(ctx context.Context) int {
	ids, _, err := s.targets(ctx)
	if err != nil {
		return 0
	}
	return len(ids)
}

// FormatTabs renders tabs one per line.
func FormatTabs(tabs []TabInfo) string {
	var b strings.Builder
	for _, t := range tabs {
		mark := ""
		if t.Current {
			mark = " (current)"
		}
		fmt.Fprintf(&b, "%d: %q %s%s\n", t.Index, t.Title, t.URL, mark)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
