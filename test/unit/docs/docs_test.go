package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, from this package's folder.
const root = "../../.."

// read returns a file of the repository, by its path from the root.
func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("cannot read %s: %v", path, err)
	}
	return string(b)
}

// codeSpan is an inline code span of Markdown.
var codeSpan = regexp.MustCompile("`[^`]*`")

// backticked returns the inline code spans of a piece of Markdown, without
// their backticks: the values a table cell names.
func backticked(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllString(s, -1) {
		out = append(out, strings.Trim(m, "`"))
	}
	return out
}

// A line is a line of a Markdown document and its number.
type line struct {
	n    int
	text string
}

// prose returns the lines of a Markdown document in order, leaving out fenced
// code blocks, where neither headings nor links are Markdown.
func prose(doc string) []line {
	var lines []line
	fenced := false
	for i, text := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(text), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, line{i + 1, text})
		}
	}
	return lines
}
