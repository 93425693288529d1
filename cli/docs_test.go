package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// mdLink is a Markdown link to a section: its target file (empty: the
// same file) and anchor.
var mdLink = regexp.MustCompile(`\]\(([^)#\s]*\.md)?#([^)\s]+)\)`)

// githubAnchors are the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces as hyphens, a repeated one
// suffixed -1, -2, ...; headings inside code fences are not headings.
func githubAnchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for line := range strings.Lines(md) {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+string(rune('0'+n))] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocAnchorsExist: every link to a section of the README or of a
// document under docs/ names a heading that exists, as GitHub renders it.
func TestDocAnchorsExist(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = githubAnchors(string(b))
		return anchors[path]
	}
	links := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := f
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(f), m[1])
			}
			links++
			if !anchorsOf(target)[m[2]] {
				t.Errorf("%s: link to %s#%s: no such heading", f, m[1], m[2])
			}
		}
	}
	if links < 10 {
		t.Errorf("found %d section links: the pattern misses them", links)
	}
}
