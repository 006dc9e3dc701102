package client

// Options are capture options, as a batch, a target or a suite gives them.
// Every field is optional: nil takes the batch's value (for a target) or the
// api's default. Lists (Outputs, Actions) replace the batch's list as a
// whole. The OptionsInput schema of web/openapi.json documents each field,
// its default and its limits; TestOptionsMatchServer holds these fields to the
// server's. Ptr makes the pointers: client.Ptr(1440).
type Options struct {
	Viewport         *ViewportOptions   `json:"viewport,omitempty"`
	Screenshot       *ScreenshotOptions `json:"screenshot,omitempty"`
	Wait             *WaitOptions       `json:"wait,omitempty"`
	TimeoutMS        *int               `json:"timeout_ms,omitempty"`
	Outputs          *[]string          `json:"outputs,omitempty"` // screenshot, html, text, links, metadata, pdf, markdown
	PDF              *PDFOptions        `json:"pdf,omitempty"`
	MarkdownMaxChars *int               `json:"markdown_max_chars,omitempty"`
	Block            *BlockOptions      `json:"block,omitempty"`
	Emulate          *EmulateOptions    `json:"emulate,omitempty"`
	Prepare          *PrepareOptions    `json:"prepare,omitempty"`
	Scroll           *ScrollOptions     `json:"scroll,omitempty"`
	Actions          *[]Action          `json:"actions,omitempty"`
	ActionsTimeoutMS *int               `json:"actions_timeout_ms,omitempty"`
	HostConcurrency  *int               `json:"host_concurrency,omitempty"`
	// AuthProfile names one of the key's auth profiles: the page is captured
	// logged in with its current login ("": none).
	AuthProfile *string `json:"auth_profile,omitempty"`
	// IgnoreHTTPSErrors loads pages whose TLS certificate is not trusted (staging sites).
	IgnoreHTTPSErrors *bool `json:"ignore_https_errors,omitempty"`
	// MaxAgeS reuses a succeeded capture of the same URL with the same
	// options by the same API key, finished at most this many seconds ago,
	// instead of rendering again (the job's result names it in cached_from).
	MaxAgeS *int `json:"max_age_s,omitempty"`
	// Quality: the retry of a suspect capture and the bot-check wait.
	Quality *QualityOptions `json:"quality,omitempty"`
}

// ViewportOptions is the browser window.
type ViewportOptions struct {
	Width             *int     `json:"width,omitempty"`
	Height            *int     `json:"height,omitempty"`
	DeviceScaleFactor *float64 `json:"device_scale_factor,omitempty"`
}

// ScreenshotOptions says how the page is pictured.
type ScreenshotOptions struct {
	Mode        *string `json:"mode,omitempty"`   // segments (default), full, viewport
	Format      *string `json:"format,omitempty"` // png, jpeg, webp
	Quality     *int    `json:"quality,omitempty"`
	MaxSegments *int    `json:"max_segments,omitempty"`
	Selector    *string `json:"selector,omitempty"`
}

// WaitOptions says when the page is ready.
type WaitOptions struct {
	Until             *string `json:"until,omitempty"` // load, domcontentloaded, networkidle
	Selector          *string `json:"selector,omitempty"`
	SelectorTimeoutMS *int    `json:"selector_timeout_ms,omitempty"`
	DelayMS           *int    `json:"delay_ms,omitempty"`
	BestAttempt       *bool   `json:"best_attempt,omitempty"`
	Fonts             *bool   `json:"fonts,omitempty"`
	Images            *bool   `json:"images,omitempty"`
	HiddenSelector    *string `json:"hidden_selector,omitempty"`
	NetworkIdleMS     *int    `json:"network_idle_ms,omitempty"`
}

// PDFOptions shape the pdf output.
type PDFOptions struct {
	Paper             *string  `json:"paper,omitempty"`
	Landscape         *bool    `json:"landscape,omitempty"`
	MarginMM          *float64 `json:"margin_mm,omitempty"`
	PrintBackground   *bool    `json:"print_background,omitempty"`
	Scale             *float64 `json:"scale,omitempty"`
	PageRanges        *string  `json:"page_ranges,omitempty"`
	PreferCSSPageSize *bool    `json:"prefer_css_page_size,omitempty"`
}

// BlockOptions lists requests the page may not make.
type BlockOptions struct {
	ResourceTypes *[]string `json:"resource_types,omitempty"`
	URLPatterns   *[]string `json:"url_patterns,omitempty"`
	// Ads, Trackers, ChatWidgets, Social and CookieBanners block by the
	// worker's filter lists (EasyList, EasyPrivacy, snapq's chat list,
	// AdGuard's Social Media and Cookie Notices filters); default false.
	Ads           *bool `json:"ads,omitempty"`
	Trackers      *bool `json:"trackers,omitempty"`
	ChatWidgets   *bool `json:"chat_widgets,omitempty"`
	Social        *bool `json:"social,omitempty"`
	CookieBanners *bool `json:"cookie_banners,omitempty"`
}

// EmulateOptions set who the browser says it is.
type EmulateOptions struct {
	UserAgent     *string            `json:"user_agent,omitempty"`
	Headers       *map[string]string `json:"headers,omitempty"`
	Cookies       *[]Cookie          `json:"cookies,omitempty"`
	Locale        *string            `json:"locale,omitempty"`
	Timezone      *string            `json:"timezone,omitempty"`
	ColorScheme   *string            `json:"color_scheme,omitempty"`
	ReducedMotion *bool              `json:"reduced_motion,omitempty"`
	Media         *string            `json:"media,omitempty"`
	Device        *string            `json:"device,omitempty"`
	Mobile        *bool              `json:"mobile,omitempty"`
	Touch         *bool              `json:"touch,omitempty"`
}

// Cookie is set before the page loads.
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain,omitempty"`
	URL      string  `json:"url,omitempty"`
	Path     string  `json:"path,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	HTTPOnly bool    `json:"http_only,omitempty"`
	SameSite string  `json:"same_site,omitempty"`
	Expires  float64 `json:"expires,omitempty"`
}

// PrepareOptions edit the page before the capture.
type PrepareOptions struct {
	HideSelectors     *[]string `json:"hide_selectors,omitempty"`
	RemoveSelectors   *[]string `json:"remove_selectors,omitempty"`
	CSS               *string   `json:"css,omitempty"`
	Script            *string   `json:"script,omitempty"`
	ScriptRequired    *bool     `json:"script_required,omitempty"`
	DisableAnimations *bool     `json:"disable_animations,omitempty"`
	// Consent: hide | accept | off, what to do with cookie/consent banners.
	Consent *string `json:"consent,omitempty"`
	// DeepCapture walks a virtualised list into the html, text and markdown outputs.
	DeepCapture *DeepCaptureOptions `json:"deep_capture,omitempty"`
}

// DeepCaptureOptions bound prepare.deep_capture (docs/api/capture.md, "Virtualised pages").
type DeepCaptureOptions struct {
	Enabled   *bool `json:"enabled,omitempty"`
	MaxItems  *int  `json:"max_items,omitempty"`
	MaxBytes  *int  `json:"max_bytes,omitempty"`
	MaxMS     *int  `json:"max_ms,omitempty"`
	IdleSteps *int  `json:"idle_steps,omitempty"`
}

// ScrollOptions scroll the page to trigger lazy loading.
type ScrollOptions struct {
	Enabled *bool `json:"enabled,omitempty"`
	StepPX  *int  `json:"step_px,omitempty"`
	DelayMS *int  `json:"delay_ms,omitempty"`
	MaxMS   *int  `json:"max_ms,omitempty"`
}

// Action is one step performed on the page before the capture; Type says
// which of the other fields apply (see docs/api/capture.md, "Actions").
type Action struct {
	Type        string `json:"type"`
	Optional    bool   `json:"optional,omitempty"`
	Selector    string `json:"selector,omitempty"`
	Text        string `json:"text,omitempty"`
	DelayMS     int    `json:"delay_ms,omitempty"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value,omitempty"`
	ByPX        int    `json:"by_px,omitempty"`
	To          string `json:"to,omitempty"`
	MS          int    `json:"ms,omitempty"`
	State       string `json:"state,omitempty"`
	TimeoutMS   int    `json:"timeout_ms,omitempty"`
	Expression  string `json:"expression,omitempty"`
	Name        string `json:"name,omitempty"`
	Mode        string `json:"mode,omitempty"`
	Format      string `json:"format,omitempty"`
	MaxSegments int    `json:"max_segments,omitempty"`
}

// Ptr returns a pointer to v, for the optional fields of Options.
func Ptr[T any](v T) *T { return &v }

// QualityOptions shape the quality verdict: Retry (default true) retakes a
// suspect capture once after escalated waits, within RetryWaitMS; a bot-check
// page that does not clear within ChallengeWaitMS fails with challenge_blocked.
type QualityOptions struct {
	Retry           *bool `json:"retry,omitempty"`
	RetryWaitMS     *int  `json:"retry_wait_ms,omitempty"`
	ChallengeWaitMS *int  `json:"challenge_wait_ms,omitempty"`
}
