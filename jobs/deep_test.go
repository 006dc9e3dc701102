package jobs

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPrepareDeepCapture(t *testing.T) {
	var in OptionsInput
	if err := json.Unmarshal([]byte(`{"prepare":{"deep_capture":{"enabled":true,"max_items":50,"max_ms":2000}}}`), &in); err != nil {
		t.Fatal(err)
	}
	var o Options
	v := &validator{errs: new(FieldErrors)}
	o.applyPage(&in, "options", v)
	if len(*v.errs) != 0 {
		t.Fatalf("errors %+v", *v.errs)
	}
	if d := o.Prepare.DeepCapture; !d.Enabled || d.MaxItems != 50 || d.MaxMS != 2000 || d.MaxBytes != 0 {
		t.Errorf("deep capture %+v", d)
	}
	for _, bad := range []string{`{"max_items":0}`, `{"max_items":20001}`, `{"max_bytes":10}`, `{"max_ms":60001}`, `{"idle_steps":21}`} {
		var in OptionsInput
		if err := json.Unmarshal([]byte(`{"prepare":{"deep_capture":`+bad+`}}`), &in); err != nil {
			t.Fatal(err)
		}
		v := &validator{errs: new(FieldErrors)}
		(&Options{}).applyPage(&in, "options", v)
		if len(*v.errs) != 1 || !strings.HasPrefix((*v.errs)[0].Field, "options.prepare.deep_capture.") {
			t.Errorf("%s: errors %+v, want one naming options.prepare.deep_capture.*", bad, *v.errs)
		}
	}
}
