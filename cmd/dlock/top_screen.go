package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// The escape sequences dlock top writes to a terminal (ANSI, xterm).
const (
	ansiAltScreen  = "\x1b[?1049h" // the alternate screen, which the shell's text is kept apart from
	ansiMainScreen = "\x1b[?1049l" // back to the shell's screen, as it was
	ansiHideCursor = "\x1b[?25l"
	ansiShowCursor = "\x1b[?25h"
	ansiHome       = "\x1b[H"
	ansiClearLine  = "\x1b[K" // to the end of the line
	ansiClearBelow = "\x1b[J" // to the end of the screen
)

// A screen is the terminal dlock top draws on: the alternate screen with
// the cursor hidden, and the keyboard, when stdin is the terminal, in raw
// mode, so that each key is read as it is typed and Ctrl-C is a key too.
// close puts the terminal back as it was.
type screen struct {
	out  *os.File
	in   *os.File    // the keyboard, or nil
	was  *term.State // the keyboard's mode before raw mode
	keys *keyReader  // nil without a keyboard
}

// terminalOf returns w as a file when it is a terminal.
func terminalOf(w io.Writer) (*os.File, bool) {
	f, ok := w.(*os.File)
	return f, ok && term.IsTerminal(int(f.Fd()))
}

// openScreen takes the terminal out over: see screen. stdin is read for
// keys when it is a terminal and this system lets dlock read it without
// blocking (see readKeys); without keys, Ctrl-C still quits, by SIGINT.
func openScreen(stdin io.Reader, out *os.File) (*screen, error) {
	s := &screen{out: out}
	if in, ok := stdin.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		if err := s.readKeyboard(in); err != nil {
			return nil, err
		}
	}
	if _, err := io.WriteString(out, ansiAltScreen+ansiHideCursor); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// readKeyboard puts the terminal in raw mode and reads its keys, unless
// this system cannot read them without blocking: then it leaves it be.
func (s *screen) readKeyboard(in *os.File) error {
	fd := int(in.Fd())
	was, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("dlock top: cannot read single keys from the terminal: %w", err)
	}
	keys, err := readKeys(in)
	if err != nil || keys == nil {
		term.Restore(fd, was)
		if err != nil {
			return fmt.Errorf("dlock top: cannot read the terminal: %w", err)
		}
		return nil
	}
	s.in, s.was, s.keys = in, was, keys
	return nil
}

// keyPresses returns the keys typed, or nil when they are not read.
func (s *screen) keyPresses() <-chan byte {
	if s.keys == nil {
		return nil
	}
	return s.keys.keys
}

// close gives the terminal back: the shell's screen, the cursor, and the
// keyboard's mode.
func (s *screen) close() {
	io.WriteString(s.out, ansiShowCursor+ansiMainScreen)
	if s.keys != nil {
		s.keys.stop()
	}
	if s.was != nil {
		term.Restore(int(s.in.Fd()), s.was)
	}
}

// show draws st over what was on the screen. In raw mode a newline does
// not return the cursor to the start of the line, hence the \r; each line
// clears the rest of its own, rather than the whole screen being cleared
// first, so that nothing flickers.
func (s *screen) show(st topState, cfg topConfig) error {
	width, height, err := term.GetSize(int(s.out.Fd()))
	if err != nil || width <= 0 || height <= 0 {
		width, height = 80, 24
	}
	lines := screenLines(st, cfg, width, height)
	var b strings.Builder
	b.WriteString(ansiHome)
	for i, line := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(line + ansiClearLine)
	}
	b.WriteString(ansiClearBelow)
	_, err = io.WriteString(s.out, b.String())
	return err
}
