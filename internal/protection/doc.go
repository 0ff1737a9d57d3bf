// Package protection decides what keeps each edge's target from being
// deleted before its dependent: a reference finalizer, a Crossplane Usage,
// both or nothing, in what state, and why (Decide, decide.go). Its parts are
// the finalizer rule (finalizer.go), the Usage rule (usage.go), the Usages
// the composition composes itself and how a Usage is read (composed.go),
// and the table of what a state means (state.go).
//
// The parts take no callbacks of each other: each reads its facts of every
// edge once, and Decide alone says, edge by edge, how they stand to each
// other by the mode. It sees typed objects and plain Go values only: the
// request's protobuf stays with internal/request, which implements Body.
package protection
