// Package message bounds the text of what the function tells a person.
// Crossplane turns every result into an event and the condition into the
// composite's status, on every reconcile: a message of megabytes, made of a
// cycle of thousands of resources or an echoed pattern, would be stored and
// sent each time, and read by nobody.
package message

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxBytes bounds a whole message: a few lines on a terminal, and well under
// what Kubernetes keeps of an event's message (1 KB is what kubectl shows
// comfortably; events are cut at 1 MB by the API server).
const MaxBytes = 4096

// MaxItemBytes bounds one item a message names: a composed resource's name,
// a pattern, an edge with the cycle it closes. A Kubernetes name is at most
// 253 bytes; an edge names two, and its field.
const MaxItemBytes = 512

// MaxItems bounds how many items a message names, so that a composition of
// thousands makes a message a person can read. Counts stay complete.
const MaxItems = 10

// Item returns s cut to MaxItemBytes, saying how much it left out.
func Item(s string) string { return Cut(s, MaxItemBytes) }

// Cut returns s when it is at most max bytes, else its first bytes, whole
// characters only, with what is left out counted, all within max bytes (for
// max of at least 64).
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	tail := fmt.Sprintf("… (%d more bytes)", len(s))
	keep := max - len(tail)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf("… (%d more bytes)", len(s)-keep)
}

// List joins items with commas, naming at most MaxItems of them, as Listed
// does.
func List(items []string) string {
	return Listed(items[:min(len(items), MaxItems)], len(items))
}

// ListOf names the items as List does, calling name only for those it lists.
func ListOf[T any](items []T, name func(T) string) string {
	names := make([]string, min(len(items), MaxItems))
	for i := range names {
		names[i] = name(items[i])
	}
	return Listed(names, len(items))
}

// Listed joins the first items of a list of total items with commas, each
// cut to MaxItemBytes, and counts those it leaves out: "a, b and 8 more".
// Every list a message holds is made here, so that all read alike.
func Listed(first []string, total int) string {
	cut := make([]string, len(first))
	for i, item := range first {
		cut[i] = Item(item)
	}
	if total <= len(first) {
		return strings.Join(cut, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(cut, ", "), total-len(first))
}

// Count is "1 thing" or "n things".
func Count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
