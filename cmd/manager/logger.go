package main

import (
	"slices"
	"sync"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// lazyWith makes a logger's With (logr's WithValues) cost nothing until the logger writes an entry
// at an enabled level. controller-runtime gives every reconcile a logger with its controller,
// object and reconcile ID (two Withs in a row), and zap's JSON encoder clones itself and encodes
// those values at once: 17 MB of garbage in 30 s of a 1,000-node rollout (docs/scale.md, fix 25),
// for loggers that, at the default level, almost never write. zapcore.NewLazyWith defers only one
// With: a second With on it builds the first. Here the fields of any chain of Withs wait together.
var lazyWith = uberzap.WrapCore(func(c zapcore.Core) zapcore.Core { return &lazyCore{base: c} })

// lazyCore is base with fields added once it first checks an enabled entry.
type lazyCore struct {
	base   zapcore.Core
	fields []zapcore.Field
	once   sync.Once
	built  zapcore.Core
}

func (c *lazyCore) core() zapcore.Core {
	c.once.Do(func() {
		c.built = c.base
		if len(c.fields) > 0 {
			c.built = c.base.With(c.fields)
		}
	})
	return c.built
}

func (c *lazyCore) Enabled(l zapcore.Level) bool { return c.base.Enabled(l) }

func (c *lazyCore) With(fields []zapcore.Field) zapcore.Core {
	return &lazyCore{base: c.base, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *lazyCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.base.Enabled(e.Level) {
		return ce
	}
	return c.core().Check(e, ce)
}

func (c *lazyCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	return c.core().Write(e, fields)
}

func (c *lazyCore) Sync() error { return c.base.Sync() }
