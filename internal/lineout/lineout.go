// Package lineout writes the output of several ranks to one stream
// line by line, each line tagged with its rank, so that ranks' lines
// never interleave mid-line (shmrun's and shmnode's --tag-output).
package lineout

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Writer writes whole lines to w, each preceded by a prefix; the Writers
// of one stream share a lock.
type Writer struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

// New returns a Writer of rank r's lines to w, "[r] " before each, under
// mu (one per stream).
func New(mu *sync.Mutex, w io.Writer, r int) *Writer {
	return &Writer{mu: mu, w: w, prefix: fmt.Sprintf("[%d] ", r)}
}

// Write keeps a partial last line until its newline comes.
func (p *Writer) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out.WriteString(p.prefix)
		out.Write(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
	if out.Len() > 0 {
		p.mu.Lock()
		_, err := p.w.Write(out.Bytes())
		p.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// Flush writes a last line that had no newline.
func (p *Writer) Flush() {
	if len(p.buf) > 0 {
		p.mu.Lock()
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.mu.Unlock()
		p.buf = nil
	}
}
