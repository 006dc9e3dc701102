package capture

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

func TestCheckImage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		data   []byte
		format string
		w, h   int
		ok     bool
	}{
		{name: "right size", data: buf.Bytes(), format: FormatPNG, w: 4, h: 3, ok: true},
		{name: "empty image (what Chromium returns past its limits)", data: nil, format: FormatWebP, w: 4, h: 3},
		{name: "wrong height", data: buf.Bytes(), format: FormatPNG, w: 4, h: 4},
		{name: "wrong width", data: buf.Bytes(), format: FormatPNG, w: 5, h: 3},
		{name: "wrong format", data: buf.Bytes(), format: FormatJPEG, w: 4, h: 3},
		{name: "garbage", data: []byte("not an image"), format: FormatPNG, w: 4, h: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkImage(tt.data, tt.format, tt.w, tt.h)
			if tt.ok {
				if err != nil {
					t.Errorf("checkImage = %v, want nil", err)
				}
				return
			}
			wantCode(t, err, CodeInternal, true)
		})
	}
}
