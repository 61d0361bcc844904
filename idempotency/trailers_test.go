package idempotency_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
)

// rawPost sends a POST with the key over a connection of its own, and
// returns the response's bytes as they came, up to the connection's close.
func rawPost(t *testing.T, addr, key string) []byte {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "POST /pay HTTP/1.1\r\nHost: pay.example\r\n" + idempotency.KeyHeader + ": " + key +
		"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wireParts splits a chunked response into its header lines, but for Date
// and the replay marker, and its trailer section (after the last chunk).
func wireParts(t *testing.T, b []byte) (header []string, trailer string) {
	t.Helper()
	head, rest, ok := bytes.Cut(b, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no end of header in %q", b)
	}
	for _, line := range strings.Split(string(head), "\r\n") {
		if !strings.HasPrefix(line, "Date: ") && !strings.HasPrefix(line, idempotency.ReplayHeader+": ") {
			header = append(header, line)
		}
	}
	_, trailer, ok = strings.Cut(string(rest), "\r\n0\r\n")
	if !ok {
		t.Fatalf("no last chunk in %q", rest)
	}
	return header, trailer
}

// A response's trailer fields, declared in its Trailer header or set
// through http.TrailerPrefix, are replayed as they were sent: the same
// bytes on the wire, the same resp.Trailer for a Go client.
func TestMiddlewareReplaysTrailers(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "X-Checksum, X-Count")
		w.Header().Set("X-Count", "in the header too")
		w.Header().Set(http.TrailerPrefix+"X-Early", "set before the status")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("first part;"))
		http.NewResponseController(w).Flush()
		w.Write([]byte("second part"))
		w.Header().Set("X-Checksum", "sha256=\t caf\xc3\xa9 \xff")
		w.Header()["X-Count"] = []string{"2", "1"}
		w.Header()[http.TrailerPrefix+"x-lower-case"] = []string{"kept as it was", ""}
	})
	web := serve(t, newStore(t, testenv.Client(t)).Middleware(h))

	first := rawPost(t, web.Listener.Addr().String(), `"raw"`)
	replay := rawPost(t, web.Listener.Addr().String(), `"raw"`)
	if !bytes.Contains(replay, []byte(idempotency.ReplayHeader+": true\r\n")) {
		t.Fatalf("the second response is not a replay: %q", replay)
	}
	firstHeader, firstTrailer := wireParts(t, first)
	replayHeader, replayTrailer := wireParts(t, replay)
	t.Logf("first: %q\nreplay: %q", first, replay)
	if !strings.Contains(firstTrailer, "X-Checksum: sha256=\t caf\xc3\xa9 \xff\r\n") || !strings.Contains(firstTrailer, "x-lower-case: ") {
		t.Fatalf("the first response's trailer section %q lacks the handler's fields", firstTrailer)
	}
	if replayTrailer != firstTrailer {
		t.Errorf("replayed trailer section:\n%q\nwant the first response's:\n%q", replayTrailer, firstTrailer)
	}
	if !reflect.DeepEqual(replayHeader, firstHeader) {
		t.Errorf("replayed header lines:\n%q\nwant the first response's:\n%q", replayHeader, firstHeader)
	}

	ctx := testenv.Timeout(t, 10*time.Second)
	trailerOf := func() (http.Header, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, web.URL+"/pay", nil)
		req.Header.Set(idempotency.KeyHeader, `"go-client"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Trailer, string(body)
	}
	trailer1, body1 := trailerOf()
	trailer2, body2 := trailerOf()
	if len(trailer1) != 4 || !reflect.DeepEqual(trailer2, trailer1) || body2 != body1 {
		t.Errorf("a Go client got trailers %q and %q, bodies %q and %q; want four fields, the same twice", trailer1, trailer2, body1, body2)
	}
}
