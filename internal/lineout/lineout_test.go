package lineout

import (
	"bytes"
	"sync"
	"testing"
)

func TestLines(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	a, b := New(&mu, &out, 0), New(&mu, &out, 12)
	a.Write([]byte("hel"))
	b.Write([]byte("one\ntw"))
	a.Write([]byte("lo\nx"))
	b.Write([]byte("o\n"))
	a.Flush()
	b.Flush()
	want := "[12] one\n[0] hello\n[12] two\n[0] x\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}
