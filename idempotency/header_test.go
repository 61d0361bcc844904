package idempotency_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
)

// The Idempotency-Key header: an RFC 8941 String, or with WithBareKeys also
// a bare value. The table goes to the handler directly, so values that
// net/http would refuse on the wire reach the parser too.
func TestKeyHeader(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	strict := newStore(t, rdb).Middleware(&payments{})
	bareStore := mustNew(t, rdb, idempotency.WithPrefix(prefix(t)+"bare:"))
	bare := bareStore.Middleware(&payments{}, idempotency.WithBareKeys())
	long := strings.Repeat("k", idempotency.MaxKeyLength)
	tests := []struct {
		name    string
		values  []string // header lines; nil for none
		strict  int      // status without WithBareKeys
		bare    int      // status with it
		problem string   // type suffix of a 400
	}{
		{"uuid", []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, 201, 201, ""},
		{"spaces around", []string{` "k1" `}, 201, 201, ""},
		{"escapes", []string{`"a\"b\\c"`}, 201, 201, ""},
		{"parameters", []string{`"k2";v=1;flag;s="x;y";t=tok;b=:aGk=:;d=-1.5;q=?0`}, 201, 201, ""},
		{"longest", []string{`"` + long + `"`}, 201, 201, ""},
		{"missing", nil, 400, 400, "#missing-key"},
		{"empty value", []string{""}, 400, 400, "#malformed-key"},
		{"empty string", []string{`""`}, 400, 400, "#malformed-key"},
		{"unquoted", []string{"8e03978e-40d5"}, 400, 201, "#malformed-key"},
		{"unquoted with space", []string{"a b"}, 400, 400, "#malformed-key"},
		{"too long", []string{`"` + long + `k"`}, 400, 400, "#malformed-key"},
		{"10 KB", []string{`"` + strings.Repeat("k", 10_000) + `"`}, 400, 400, "#malformed-key"},
		{"non-ASCII", []string{`"clé"`}, 400, 400, "#malformed-key"},
		{"non-ASCII bare", []string{"clé"}, 400, 400, "#malformed-key"},
		{"unterminated", []string{`"abc`}, 400, 400, "#malformed-key"},
		{"trailing garbage", []string{`"abc" x`}, 400, 400, "#malformed-key"},
		{"a list", []string{`"a", "b"`}, 400, 400, "#malformed-key"},
		{"bad escape", []string{`"a\nb"`}, 400, 400, "#malformed-key"},
		{"bad parameter", []string{`"k";X=1`}, 400, 400, "#malformed-key"},
		{"parameter without value", []string{`"k";x=`}, 400, 400, "#malformed-key"},
		{"two lines", []string{`"a"`, `"a"`}, 400, 400, "#malformed-key"},
		{"CRLF injection", []string{"\"a\"\r\nX-Injected: 1"}, 400, 400, "#malformed-key"},
		{"NUL", []string{"\"a\x00b\""}, 400, 400, "#malformed-key"},
		{"token", []string{"abc"}, 400, 201, "#malformed-key"},
		{"integer", []string{"42"}, 400, 201, "#malformed-key"},
		{"byte sequence", []string{":aGk=:"}, 400, 201, "#malformed-key"},
	}
	for _, tt := range tests {
		for _, mode := range []struct {
			h    http.Handler
			want int
			name string
		}{{strict, tt.strict, "strict"}, {bare, tt.bare, "bare"}} {
			r := httptest.NewRequestWithContext(testenv.Timeout(t, 10*time.Second), http.MethodPost, "/pay", nil)
			r.Header[idempotency.KeyHeader] = tt.values
			w := httptest.NewRecorder()
			mode.h.ServeHTTP(w, r)
			if w.Code != mode.want {
				t.Errorf("%s, %s: %d %s, want %d", tt.name, mode.name, w.Code, w.Body, mode.want)
				continue
			}
			if w.Code == 400 {
				typ, _ := problemOf(t, reply{w.Code, w.Header(), w.Body.String()})
				if !strings.HasSuffix(typ, tt.problem) {
					t.Errorf("%s, %s: type %q, want ...%s", tt.name, mode.name, typ, tt.problem)
				}
			}
		}
	}
}

// On the wire, a header injection attempt does not get past net/http, and
// the handler does not run.
func TestKeyHeaderInjectionOnTheWire(t *testing.T) {
	t.Parallel()
	pay := &payments{}
	srv := serve(t, newStore(t, testenv.Client(t)).Middleware(pay))
	for _, value := range []string{"\"a\"\rX-Injected: 1", "\"a\x00\"", "\"a\"\n\tcontinued"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		conn.Write([]byte("POST /pay HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nIdempotency-Key: " + value + "\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: status %d, want 400", value, resp.StatusCode)
		}
	}
	if n := pay.charges.Load(); n != 0 {
		t.Errorf("the handler ran %d times", n)
	}
}
