package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// lineHandler is the slog.Handler through which, with -v, the library tells
// the run verb what it cannot return to it: a renewal that failed and is
// retried, a lock lost, a wait without release messages. Each record is one
// line in the style of dlock's own messages:
//
//	dlock: refresh failed; retrying (key: "job", error: ...)
//
// Groups, which the library does not use, are flattened.
type lineHandler struct {
	w     io.Writer // safe for concurrent use
	attrs []slog.Attr
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lineHandler) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString("dlock: ")
	b.WriteString(strings.TrimPrefix(rec.Message, "dlock: "))
	sep := " ("
	add := func(a slog.Attr) bool {
		if a.Equal(slog.Attr{}) {
			return true
		}
		b.WriteString(sep + a.Key + ": " + a.Value.Resolve().String())
		sep = ", "
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	rec.Attrs(add)
	if sep == ", " {
		b.WriteString(")")
	}
	b.WriteString("\n")
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lineHandler{w: h.w, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }
