package idempotency

import (
	"errors"
	"fmt"
	"strings"
)

// KeyHeader is the request header that carries the idempotency key.
const KeyHeader = "Idempotency-Key"

// MaxKeyLength is the length of the longest idempotency key the Middleware
// accepts, in bytes, once unquoted.
const MaxKeyLength = 255

// errNoKey means the request has no Idempotency-Key header.
var errNoKey = errors.New("no " + KeyHeader + " header")

// parseKey returns the idempotency key of a request from the values of its
// Idempotency-Key header lines: one Structured Field Item whose value is a
// String (RFC 8941, sections 3.3.3 and 4.2.5), such as "8e03978e-40d5".
// Parameters after it are allowed, and ignored. With bare, a value that
// does not start with a quote is taken as it is if it is visible ASCII.
// The error says what is wrong, for the client.
func parseKey(values []string, bare bool) (string, error) {
	switch len(values) {
	case 0:
		return "", errNoKey
	case 1:
	default:
		return "", fmt.Errorf("%d %s header lines; send exactly one", len(values), KeyHeader)
	}
	in := strings.Trim(values[0], " \t")
	var key string
	var err error
	if bare && !strings.HasPrefix(in, `"`) {
		key, err = parseBare(in)
	} else {
		key, err = parseItem(in)
	}
	switch {
	case err != nil:
		return "", err
	case key == "":
		return "", errors.New("the key is empty")
	case len(key) > MaxKeyLength:
		return "", fmt.Errorf("the key is %d bytes long; at most %d are allowed", len(key), MaxKeyLength)
	}
	return key, nil
}

// parseBare accepts a key without quotes: visible ASCII characters.
func parseBare(in string) (string, error) {
	for i := 0; i < len(in); i++ {
		if in[i] <= ' ' || in[i] >= 0x7f {
			return "", fmt.Errorf("the key holds the byte %#x at offset %d; only visible ASCII characters are allowed", in[i], i)
		}
	}
	return in, nil
}

// parseItem parses an Item whose bare item is a String, and its parameters.
func parseItem(in string) (string, error) {
	p := sfParser{in: in}
	if !strings.HasPrefix(in, `"`) {
		return "", fmt.Errorf(`the value must be a quoted string, such as "8e03978e-40d5-43e8-bc93-6894a57f9324" (RFC 8941)`)
	}
	key, err := p.string()
	if err != nil {
		return "", err
	}
	if err := p.parameters(); err != nil {
		return "", err
	}
	if p.pos != len(p.in) {
		return "", fmt.Errorf("unexpected %q after the key", p.in[p.pos:])
	}
	return key, nil
}

// sfParser reads RFC 8941 syntax from in, starting at pos.
type sfParser struct {
	in  string
	pos int
}

func (p *sfParser) peek() byte {
	if p.pos < len(p.in) {
		return p.in[p.pos]
	}
	return 0
}

// string parses an sf-string: printable ASCII between quotes, where \" and
// \\ stand for " and \.
func (p *sfParser) string() (string, error) {
	p.pos++ // the opening quote
	var b strings.Builder
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		p.pos++
		switch {
		case c == '\\':
			if next := p.peek(); next != '"' && next != '\\' {
				return "", fmt.Errorf("a backslash in the key must escape a quote or a backslash")
			}
			b.WriteByte(p.in[p.pos])
			p.pos++
		case c == '"':
			return b.String(), nil
		case c < ' ' || c >= 0x7f:
			return "", fmt.Errorf("the key holds the byte %#x; only printable ASCII characters are allowed", c)
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("the key's closing quote is missing")
}

// parameters skips the parameters of an Item: ;key or ;key=bare-item.
func (p *sfParser) parameters() error {
	for p.peek() == ';' {
		p.pos++
		for p.peek() == ' ' {
			p.pos++
		}
		if c := p.peek(); !isLCAlpha(c) && c != '*' {
			return fmt.Errorf("a parameter after the key must start with a lowercase letter or '*'")
		}
		for c := p.peek(); isLCAlpha(c) || isDigit(c) || strings.IndexByte("_-.*", c) >= 0; c = p.peek() {
			p.pos++
		}
		if p.peek() != '=' {
			continue // a Boolean true
		}
		p.pos++
		if err := p.skipBareItem(); err != nil {
			return err
		}
	}
	return nil
}

// skipBareItem skips a parameter's value: a String, Byte Sequence, Boolean,
// Integer, Decimal or Token.
func (p *sfParser) skipBareItem() error {
	c := p.peek()
	start := p.pos
	switch {
	case c == '"':
		_, err := p.string()
		return err
	case c == ':': // :base64:
		end := strings.IndexByte(p.in[p.pos+1:], ':')
		if end < 0 {
			return errors.New("a byte sequence parameter is not closed")
		}
		p.pos += end + 2
	case c == '?': // ?0 or ?1
		p.pos++
		if b := p.peek(); b != '0' && b != '1' {
			return errors.New("a boolean parameter must be ?0 or ?1")
		}
		p.pos++
	case c == '-' || isDigit(c):
		p.pos++
		for b := p.peek(); isDigit(b) || b == '.'; b = p.peek() {
			p.pos++
		}
	case isAlpha(c) || c == '*':
		for b := p.peek(); b > ' ' && b < 0x7f && strings.IndexByte(`"(),;<=>?@[\]{}`, b) < 0; b = p.peek() {
			p.pos++
		}
	}
	if p.pos == start {
		return errors.New("a parameter's value is missing or malformed")
	}
	return nil
}

func isLCAlpha(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool   { return isLCAlpha(c) || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool   { return '0' <= c && c <= '9' }
