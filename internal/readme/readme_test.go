package readme

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	// The packages the Go code of the documents uses: importing them
	// makes this test's binary, and so go test's cached result, change
	// when they do, since the go vet it runs is invisible to the cache.
	_ "github.com/shmpi/shmpi/coll"
	_ "github.com/shmpi/shmpi/mpio"
	_ "github.com/shmpi/shmpi/ranks"
	_ "github.com/shmpi/shmpi/ranks/launch"
	_ "github.com/shmpi/shmpi/ranks/ranktest"
	_ "github.com/shmpi/shmpi/ulfm"
	_ "github.com/shmpi/shmpi/win"
)

// block is one ```go block of a Markdown file.
type block struct {
	file string // relative to the module root
	line int    // of the opening fence
	code string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var excerptMark = regexp.MustCompile(`^// \(excerpt of the program in (\S+)\)$`)

// moduleRoot is two levels up from this package.
func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the module root %s: %v", root, err)
	}
	return root
}

// goBlocks returns the ```go blocks of a Markdown file.
func goBlocks(t *testing.T, root, file string) []block {
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	var code strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{file: file, line: n}
			code.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.code = code.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		}
	}
	if cur != nil {
		t.Errorf("%v: the ```go block is not closed", *cur)
	}
	return out
}

// markdownFiles are the files whose Go code is checked.
func markdownFiles(t *testing.T, root string) []string {
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	return files
}

// isWholeFile reports whether code is a Go file with its package clause,
// and whether that is a test package (or the file declares tests).
func isWholeFile(code string) (whole, test bool) {
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", code, parser.PackageClauseOnly)
	if err != nil {
		return false, false
	}
	return true, strings.HasSuffix(f.Name.Name, "_test") || strings.Contains(code, "*testing.T)")
}

// containsExcerpt reports whether the lines of excerpt appear in program
// one after another, each indented by the same number of tabs more.
func containsExcerpt(program, excerpt string) bool {
	prog := strings.Split(strings.TrimRight(program, "\n"), "\n")
	ex := strings.Split(strings.TrimRight(excerpt, "\n"), "\n")
	for start := range prog {
		for depth := 0; depth < 8; depth++ {
			indent := strings.Repeat("\t", depth)
			if start+len(ex) > len(prog) {
				break
			}
			ok := true
			for i, l := range ex {
				if p := prog[start+i]; !(l == "" && p == "" || p == indent+l) {
					ok = false
					break
				}
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// TestGoBlocksCompile vets every whole-file block of README.md and
// docs/*.md (vet type-checks it first), and checks every excerpt against
// the whole program it names.
func TestGoBlocksCompile(t *testing.T) {
	root := moduleRoot(t)
	byFile := map[string][]block{}
	var all []block
	for _, f := range markdownFiles(t, root) {
		bs := goBlocks(t, root, f)
		byFile[f] = bs
		all = append(all, bs...)
	}
	readme := 0
	for _, b := range byFile["README.md"] {
		if w, _ := isWholeFile(b.code); w {
			readme++
		}
	}
	if readme == 0 {
		t.Errorf("README.md has no whole-file ```go block: the quick start should be one")
	}
	tmp := t.TempDir()
	for i, b := range all {
		first, rest, _ := strings.Cut(b.code, "\n")
		if m := excerptMark.FindStringSubmatch(first); m != nil {
			found := false
			for _, p := range byFile[m[1]] {
				if w, _ := isWholeFile(p.code); w && containsExcerpt(p.code, rest) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%v: the excerpt is not in any whole program of %s, line for line", b, m[1])
			}
			continue
		}
		whole, test := isWholeFile(b.code)
		if !whole {
			t.Errorf("%v: neither a whole Go file (with its package clause) nor marked as an excerpt (first line: // (excerpt of the program in FILE))", b)
			continue
		}
		name := "main.go"
		if test {
			name = "snippet_test.go"
		}
		dir := filepath.Join(tmp, fmt.Sprintf("block%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.code), 0o644); err != nil {
			t.Fatal(err)
		}
		// File arguments are type-checked against the module of the
		// working directory: this one, so the snippet's imports of
		// github.com/shmpi/shmpi resolve to this checkout.
		cmd := exec.Command("go", "vet", path)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%v: go vet: %v\n%s", b, err, out)
		}
	}
}

// The checker itself: an excerpt matches only line for line.
func TestContainsExcerpt(t *testing.T) {
	prog := "package main\n\nfunc main() {\n\tx := 1\n\n\tprintln(x)\n}\n"
	for _, c := range []struct {
		excerpt string
		want    bool
	}{
		{"x := 1\n\nprintln(x)\n", true},
		{"\tx := 1\n", true},
		{"func main() {\n\tx := 1\n", true},
		{"x := 1\nprintln(x)\n", false}, // a line left out
		{"x := 2\n", false},
		{"  x := 1\n", false}, // spaces are not tabs
	} {
		if got := containsExcerpt(prog, c.excerpt); got != c.want {
			t.Errorf("containsExcerpt(%q) = %v, want %v", c.excerpt, got, c.want)
		}
	}
}
