package top

import (
	"errors"
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
// the cursor hidden, and the keyboard, when stdin is a terminal, in raw
// mode, so that each key is read as it is typed and Ctrl-C is a key too.
// close puts the terminal back as it was.
type screen struct {
	out  *os.File
	keys *keyReader // nil without a keyboard
}

// terminalOf returns w as a file when it is a terminal.
func terminalOf(w io.Writer) (*os.File, bool) {
	f, ok := w.(*os.File)
	return f, ok && term.IsTerminal(int(f.Fd()))
}

// openScreen takes the terminal out over: see screen. Keys are read when
// stdin is a terminal and this system lets dlock top stop reading them
// (see readKeys); without keys, Ctrl-C still quits, by SIGINT.
func openScreen(stdin io.Reader, out *os.File) (*screen, error) {
	s := &screen{out: out}
	if in, ok := stdin.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		keys, err := readKeys()
		if err != nil {
			return nil, fmt.Errorf("dlock top: cannot read single keys from the terminal: %w", err)
		}
		s.keys = keys
	}
	if _, err := io.WriteString(out, ansiAltScreen+ansiHideCursor); err != nil {
		return nil, errors.Join(err, s.close())
	}
	return s, nil
}

// keyPresses returns the keys typed, or nil when they are not read.
func (s *screen) keyPresses() <-chan byte {
	if s.keys == nil {
		return nil
	}
	return s.keys.keys
}

// close gives the terminal back: the shell's screen, the cursor, and the
// keyboard's mode. Its error says what it could not put back.
func (s *screen) close() error {
	_, err := io.WriteString(s.out, ansiShowCursor+ansiMainScreen)
	if s.keys != nil {
		err = errors.Join(err, s.keys.stop())
	}
	if err != nil {
		return fmt.Errorf("dlock top: the terminal may need a reset (stty sane): %w", err)
	}
	return nil
}

// show draws st over what was on the screen. In raw mode a newline does
// not return the cursor to the start of the line, hence the \r; each line
// clears the rest of its own, rather than the whole screen being cleared
// first, so that nothing flickers.
func (s *screen) show(st topState, cfg Config) error {
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
