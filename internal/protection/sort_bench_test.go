package protection

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// BenchmarkSortByPrefix compares sortByPrefix's radix sort with sorting the
// same entries by comparison, as sortByUID did before, on random UUIDs.
func BenchmarkSortByPrefix(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		rng := rand.New(rand.NewPCG(1, 2))
		entries := make([]uidEntry, n)
		for i := range entries {
			uid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Int64N(1<<48))
			entries[i] = uidEntry{prefix: uidPrefix(uid), uid: uid, number: int32(i)}
		}
		work, buffer := make([]uidEntry, n), make([]uidEntry, n)
		b.Run(fmt.Sprintf("n=%d/sort=radix", n), func(b *testing.B) {
			for b.Loop() {
				copy(work, entries)
				sortByPrefix(work, buffer)
			}
		})
		b.Run(fmt.Sprintf("n=%d/sort=comparison", n), func(b *testing.B) {
			for b.Loop() {
				copy(work, entries)
				slices.SortFunc(work, func(a, b uidEntry) int {
					return cmp.Or(cmp.Compare(a.prefix, b.prefix), strings.Compare(a.uid, b.uid))
				})
			}
		})
	}
}
