package main

import (
	"bytes"
	"strings"
	"testing"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestLazyWith: a chain of Withs builds nothing until an entry at an enabled level, which then
// carries every field of the chain, as without lazyWith.
func TestLazyWith(t *testing.T) {
	var buf bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(uberzap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.InfoLevel)
	l := uberzap.New(core, lazyWith).With(uberzap.String("controller", "profile")).With(uberzap.String("reconcileID", "r1"))
	lc, ok := l.Core().(*lazyCore)
	if !ok {
		t.Fatalf("the logger's core is a %T, want *lazyCore", l.Core())
	}
	l.Debug("below the level")
	if lc.built != nil || buf.Len() != 0 {
		t.Fatalf("a debug entry at info level built the core (%v) or wrote %q", lc.built != nil, buf.String())
	}
	l.Info("written")
	out := buf.String()
	for _, want := range []string{`"controller":"profile"`, `"reconcileID":"r1"`, `"msg":"written"`} {
		if !strings.Contains(out, want) {
			t.Errorf("entry %q lacks %s", out, want)
		}
	}
	// The parent logger is not changed by its child's fields.
	buf.Reset()
	uberzap.New(core, lazyWith).With(uberzap.String("a", "1")).Info("parent")
	if strings.Contains(buf.String(), "reconcileID") || !strings.Contains(buf.String(), `"a":"1"`) {
		t.Errorf("entry %q", buf.String())
	}
}
