package docs

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// linkTarget is the target of a Markdown link or image, [text](target) or
// [text](target "title"); the text may start on an earlier line.
var linkTarget = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// referenceDefinition is a link reference definition: [label]: target.
var referenceDefinition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)

// markdownFiles are the Markdown files whose links are checked: the README,
// the docs, and those beside the examples and the tests, but for the
// published compositions of the corpus, kept byte for byte as published.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, dir := range []string{"docs", "example", "test"} {
		err := fs.WalkDir(osFS, dir, func(p string, e fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case e.IsDir() && path.Base(p) == "corpus" && strings.HasPrefix(p, "test/e2e/"):
				return fs.SkipDir
			case !e.IsDir() && path.Ext(p) == ".md":
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// links returns the targets of a Markdown document's links, with their line
// numbers, leaving out code: fenced blocks and inline code spans.
func links(doc string) []line {
	var out []line
	for _, l := range prose(doc) {
		text := codeSpan.ReplaceAllString(l.text, "`code`")
		for _, m := range linkTarget.FindAllStringSubmatch(text, -1) {
			out = append(out, line{l.n, m[1]})
		}
		if m := referenceDefinition.FindStringSubmatch(text); m != nil {
			out = append(out, line{l.n, m[1]})
		}
	}
	return out
}

// heading is an ATX heading: one to six #, then its text.
var heading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)

// inlineLink is a link inside a heading, whose text alone makes the anchor.
var inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// anchors returns the anchors GitHub gives a Markdown document's headings:
// the text lowercased, without the characters that are neither letters,
// digits, spaces, hyphens nor underscores, spaces made hyphens, and a second
// heading of the same anchor suffixed -1, a third -2.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(doc) {
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		text := inlineLink.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			out[fmt.Sprintf("%s-%d", anchor, n)] = true
		} else {
			out[anchor] = true
		}
		seen[anchor]++
	}
	return out
}

// TestEveryRelativeLinkResolves checks every relative link of the Markdown
// files: the file or folder it names exists, and the heading its #anchor
// names is in the Markdown file it names (or in its own file, for a bare
// #anchor). Links with a scheme are left alone: they need the network.
func TestEveryRelativeLinkResolves(t *testing.T) {
	docs := map[string]string{}
	doc := func(file string) string {
		if _, ok := docs[file]; !ok {
			docs[file] = read(t, file)
		}
		return docs[file]
	}
	for _, file := range markdownFiles(t) {
		for _, l := range links(doc(file)) {
			if strings.Contains(l.text, "://") || strings.HasPrefix(l.text, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(l.text, "#")
			resolved := file
			if target != "" {
				resolved = path.Clean(path.Join(path.Dir(file), target))
				info, err := fs.Stat(osFS, resolved)
				if err != nil {
					t.Errorf("%s:%d: link %s: no file or folder %s", file, l.n, l.text, resolved)
					continue
				}
				if info.IsDir() {
					resolved = ""
				}
			}
			if anchor == "" || path.Ext(resolved) != ".md" {
				continue
			}
			if !anchors(doc(resolved))[anchor] {
				t.Errorf("%s:%d: link %s: %s has no heading whose anchor is #%s", file, l.n, l.text, resolved, anchor)
			}
		}
	}
}
